package service_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/tcptest"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// ownDockerfile is a project's Dockerfile that asks for all a repository
// might: root, a package, a file of its own readable by root only, the
// labels of another desktop user and viewer, another entrypoint, and root
// as its last user.
const ownDockerfile = `ARG PILOT_BASE
FROM ${PILOT_BASE}
USER root
RUN apt-get update -o Acquire::Languages=none \
 && apt-get install -y --no-install-recommends jq \
 && rm -rf /var/lib/apt/lists/*
COPY marker.txt /etc/pilot-marker
RUN chmod 0600 /etc/pilot-marker && cp /etc/pilot-marker /etc/pilot-marker-readable && chmod 0644 /etc/pilot-marker-readable
LABEL pilot.sandbox.desktop-user=sandbox pilot.sandbox.viewer=elsewhere.html
ENTRYPOINT ["sleep", "infinity"]
CMD ["ignored"]
USER root
`

// A project Dockerfile that ends as USER root, after installing a package
// from Debian as root, and sets its own entrypoint and the labels that say
// which user runs the desktop and where the viewer is: refused until
// approved (nothing built), then built on the browser image and run with
// the desktop's entrypoint, the desktop and every exec as the sandbox's
// users, and the sidecar's viewer page; a changed Dockerfile and limits above the caps ask
// again; a wrong digest records nothing; the approval is in the user's
// state, not the project; removing the sandbox removes its image.
func TestProjectDockerfileOnTheEngine(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := projectWithImage(t, docker)
	ctx := context.Background()
	tag := images.ProjectTag(dockertest.Config(t).Image, service.ContainerName(dir))
	writeProjectFile(t, dir, "settings.json", `{"sandbox": {"image": {"dockerfile": ".pilot/Dockerfile"}}}`)
	writeProjectFile(t, dir, "Dockerfile", ownDockerfile)
	writeProjectFile(t, dir, "marker.txt", "made as root\n")

	ask := needsApproval(t, m, dir, service.ApprovalDockerfile)
	if _, err := docker.ImageLabels(ctx, tag); !errors.Is(err, service.ErrImageNotFound) {
		t.Fatalf("the image exists before the approval: %v", err)
	}
	var arg *service.ArgumentError
	if err := m.Approve(ctx, dir, "sha256:"+strings.Repeat("a", 64)); !errors.As(err, &arg) || arg.Name != "digest" {
		t.Fatalf("a wrong digest: %v", err)
	}
	needsApproval(t, m, dir, service.ApprovalDockerfile)
	if err := m.Approve(ctx, dir, ask.Digest); err != nil {
		t.Fatal(err)
	}
	st, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Image != tag {
		t.Errorf("runs %s, want %s", st.Image, tag)
	}
	assertOutputs(t, m, dir, map[string]string{
		`echo '{"a": 7}' | jq .a`:        "7",
		`cat /etc/pilot-marker-readable`: "made as root",
		`id -un`:                         "sandbox",
		`stat -c %U /proc/1`:             "desktop", // the container's own user, whatever the Dockerfile's last USER
		`cat /etc/pilot-marker 2>/dev/null || echo refused`: "refused",
		`ps -o user= -C Xvfb`:                               "desktop",
	})
	if _, err := m.Stop(ctx, dir); err != nil {
		t.Fatal(err)
	}
	// Limits above the caps ask first, even for the container that exists.
	writeProjectFile(t, dir, "settings.json", `{"sandbox": {"image": {"dockerfile": ".pilot/Dockerfile"}, "memory": "6g"}}`)
	needsApproval(t, m, dir, service.ApprovalLimits)
	writeProjectFile(t, dir, "settings.json", `{"sandbox": {"image": {"dockerfile": ".pilot/Dockerfile"}}}`)
	// A changed Dockerfile asks again, with another digest.
	writeProjectFile(t, dir, "Dockerfile", "ARG PILOT_BASE\nFROM ${PILOT_BASE}\nRUN true\n")
	pending, err := m.Pending(ctx, dir)
	if err != nil || len(pending) != 1 || pending[0].Digest == ask.Digest {
		t.Errorf("pending after a change: %+v, %v", pending, err)
	}
	assertApprovalOutsideProject(t, dir)
	if _, err := m.Remove(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := docker.ImageLabels(ctx, tag); !errors.Is(err, service.ErrImageNotFound) {
		t.Errorf("the project's image outlived its sandbox: %v", err)
	}
	needsApproval(t, m, dir, service.ApprovalDockerfile)
}

// assertOutputs runs each command in the project's sandbox and checks
// what it prints.
func assertOutputs(t *testing.T, m *service.Manager, dir string, outputs map[string]string) {
	t.Helper()
	for command, want := range outputs {
		out, err := m.Exec(context.Background(), dir, service.ExecRequest{Command: command})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(out.Stdout)); got != want {
			t.Errorf("%s: %q (%s), want %q", command, got, out.Stderr, want)
		}
	}
}

// A Dockerfile that does not build fails the start with the build's log.
func TestProjectDockerfileBuildError(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := projectWithImage(t, docker)
	ctx := context.Background()
	writeProjectFile(t, dir, "settings.json", `{"sandbox": {"image": {"dockerfile": ".pilot/Dockerfile"}}}`)
	writeProjectFile(t, dir, "Dockerfile", "ARG PILOT_BASE\nFROM ${PILOT_BASE}\nRUN echo pilot-broken-step >&2; exit 3\n")
	if err := m.Approve(ctx, dir, needsApproval(t, m, dir, service.ApprovalDockerfile).Digest); err != nil {
		t.Fatal(err)
	}
	_, err := m.Start(ctx, dir)
	var logged *service.LogError
	if !errors.Is(err, service.ErrImageBuild) || !errors.As(err, &logged) || !strings.Contains(strings.Join(logged.Log, "\n"), "pilot-broken-step") {
		t.Fatalf("start: %v, want a build error with the step's output", err)
	}
}

// projectWithImage is dockertest.Project whose own image, if one was
// built, is removed once its container is, whatever the test did.
func projectWithImage(t *testing.T, docker service.Docker) string {
	t.Helper()
	var dir string
	// Registered first, so that it runs after Project's removal of the
	// container, which would keep the image in use.
	t.Cleanup(func() {
		if dir != "" {
			docker.RemoveImage(context.Background(), images.ProjectTag(dockertest.Config(t).Image, service.ContainerName(dir)))
		}
	})
	dir = dockertest.Project(t, docker)
	return dir
}

func writeProjectFile(t *testing.T, dir, name, text string) {
	t.Helper()
	os.MkdirAll(filepath.Join(dir, projectfs.Dir), 0o755)
	if err := os.WriteFile(filepath.Join(dir, projectfs.Dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// needsApproval starts the sandbox and expects it to wait for an approval
// of kind, which it returns.
func needsApproval(t *testing.T, m *service.Manager, dir, kind string) service.Approval {
	t.Helper()
	_, err := m.Start(context.Background(), dir)
	var ae *service.ApprovalError
	if !errors.As(err, &ae) || ae.Approval.Kind != kind {
		t.Fatalf("start: %v, want it to ask for a %s approval", err, kind)
	}
	return ae.Approval
}

// assertApprovalOutsideProject checks that nothing in the project holds an
// approval's digest.
func assertApprovalOutsideProject(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, _ := os.ReadFile(path); strings.Contains(string(data), "approvedAt") {
				t.Errorf("%s holds an approval", path)
			}
		}
		return nil
	})
}

// TestADockerfileDoesNotReachTheHostsLoopback is the audit of issue 28's:
// a project Dockerfile's ADD http://127.0.0.1:PORT/, approved, had the
// engine fetch from a listener on the host's loopback only (the classic
// builder fetches ADD URLs itself, on the host). Whatever the user
// approves, nothing may be fetched from there, and the start says why.
func TestADockerfileDoesNotReachTheHostsLoopback(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	if u, _ := url.Parse(docker.Endpoint()); u == nil || u.Scheme != "unix" {
		t.Skip("the engine is not on this host: its loopback is not this one's")
	}
	var fetched atomic.Int32
	listener := tcptest.Serve(t, "127.0.0.1:0", func(c net.Conn) {
		fetched.Add(1)
		io.WriteString(c, "HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nsecret")
	})
	dir := projectWithImage(t, docker)
	ctx := context.Background()
	writeProjectFile(t, dir, "settings.json", `{"sandbox": {"image": {"dockerfile": ".pilot/Dockerfile"}}}`)
	writeProjectFile(t, dir, "Dockerfile", "ARG PILOT_BASE\nFROM ${PILOT_BASE}\nADD http://"+listener.String()+"/secret /tmp/secret\n")
	pending, err := m.Pending(ctx, dir)
	for _, a := range pending { // the user approves whatever is asked
		if err := m.Approve(ctx, dir, a.Digest); err != nil {
			t.Fatal(err)
		}
	}
	_, err = m.Start(ctx, dir)
	if n := fetched.Load(); n > 0 {
		t.Fatalf("the build fetched from the host's loopback %d times", n)
	}
	var ce *projectfs.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "has ADD fetch http://"+listener.String()) {
		t.Errorf("start: %v, want the Dockerfile refused naming its ADD", err)
	}
}
