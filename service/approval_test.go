package service

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

func TestLimitsAsk(t *testing.T) {
	caps := projectfs.DefaultUserConfig().Caps // 4g, 2 CPUs, 4096, 2g
	for _, tc := range []struct {
		sandbox string
		summary string // "" asks nothing
	}{
		{`{}`, ""},
		{`{"memory": "4g", "cpus": 2, "processes": 4096, "shmSize": "2g"}`, ""},
		{`{"memory": "8g"}`, "run its sandbox with memory 8g (your cap 4GiB)"},
		{`{"memory": "8g", "processes": 10000}`, "run its sandbox with memory 8g (your cap 4GiB), processes 10000 (your cap 4096)"},
		{`{"cpus": 2.5, "shmSize": "3g"}`, "run its sandbox with cpus 2.5 (your cap 2), shmSize 3g (your cap 2GiB)"},
	} {
		dir := project(t)
		writeSettings(t, dir, `{"sandbox": `+tc.sandbox+`}`)
		pc, err := projectfs.ReadConfig(dir)
		if err != nil {
			t.Fatal(err)
		}
		ask, ok := limitsAsk(pc, caps)
		if ok != (tc.summary != "") || ask.Summary != tc.summary {
			t.Errorf("%s: asks %v %q, want %q", tc.sandbox, ok, ask.Summary, tc.summary)
		}
		if ok && (ask.Kind != ApprovalLimits || !strings.HasPrefix(ask.Digest, "sha256:") || len(ask.Digest) != 71) {
			t.Errorf("%s: %+v", tc.sandbox, ask)
		}
	}
}

// The limits' digest covers the limits above the caps as asked: another
// value asks again, a change within the caps does not.
func TestLimitsDigest(t *testing.T) {
	caps := projectfs.DefaultUserConfig().Caps
	digest := func(sandbox string) string {
		dir := project(t)
		writeSettings(t, dir, `{"sandbox": `+sandbox+`}`)
		pc, err := projectfs.ReadConfig(dir)
		if err != nil {
			t.Fatal(err)
		}
		ask, _ := limitsAsk(pc, caps)
		return ask.Digest
	}
	base := digest(`{"memory": "8g", "processes": 100}`)
	if d := digest(`{"memory": "8g", "processes": 200, "display": {"width": 800, "height": 600}}`); d != base {
		t.Errorf("a change within the caps changed the digest")
	}
	if d := digest(`{"memory": "8192m"}`); d != base {
		t.Errorf("the same memory written otherwise changed the digest")
	}
	for _, other := range []string{`{"memory": "9g"}`, `{"memory": "8g", "cpus": 3}`, `{"memory": "8g", "processes": 5000}`} {
		if digest(other) == base {
			t.Errorf("%s has the digest of memory 8g alone", other)
		}
	}
}

func TestLimitsAboveCapsNeedApproval(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	ctx := context.Background()
	writeSettings(t, dir, `{"sandbox": {"memory": "8g", "processes": 10000}}`)
	_, err := h.m.Start(ctx, dir)
	var ae *ApprovalError
	if !errors.As(err, &ae) || !errors.Is(err, ErrNeedsApproval) || ae.Approval.Kind != ApprovalLimits {
		t.Fatalf("start: %v, want a limits approval error", err)
	}
	if n := len(h.docker.specs); n != 0 {
		t.Fatalf("%d containers made before the approval", n)
	}
	err = h.m.Approve(ctx, dir, "sha256:"+strings.Repeat("0", 64))
	var arg *ArgumentError
	if !errors.As(err, &arg) || arg.Name != "digest" {
		t.Fatalf("a wrong digest: %v, want an ArgumentError on digest", err)
	}
	if _, err := os.Stat(h.m.approvals.Path(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a wrong digest recorded something: %v", err)
	}
	if err := h.m.Approve(ctx, dir, ae.Approval.Digest); err != nil {
		t.Fatal(err)
	}
	assertStateOnly(t, h.m, dir)
	st, err := h.m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := h.docker.InspectContainer(ctx, st.ContainerID)
	if c.Limits.MemoryBytes != 8<<30 || c.Limits.PidsLimit != 10000 {
		t.Errorf("limits %+v", c.Limits)
	}
	// More than approved asks again, at the next start of the same container.
	h.m.Stop(ctx, dir)
	writeSettings(t, dir, `{"sandbox": {"memory": "12g", "processes": 10000}}`)
	if _, err := h.m.Start(ctx, dir); !errors.As(err, &ae) || !strings.Contains(ae.Approval.Summary, "memory 12g") {
		t.Errorf("a larger memory: %v, want it asked", err)
	}
}

// assertStateOnly checks that the approval is in the user's state and that
// nothing was written into the project.
func assertStateOnly(t *testing.T, m *Manager, dir string) {
	t.Helper()
	if !strings.HasPrefix(m.approvals.Path(dir), m.cfg.StateDir) {
		t.Errorf("approvals kept in %s, not under the state directory", m.approvals.Path(dir))
	}
	data, err := os.ReadFile(m.approvals.Path(dir))
	if err != nil || !bytes.Contains(data, []byte(dir)) {
		t.Errorf("approval file: %v %s", err, data)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, projectfs.Dir))
	for _, e := range entries {
		if !slices.Contains([]string{"settings.json", "Dockerfile", "sandbox.json", ".gitignore", "extra.txt"}, e.Name()) {
			t.Errorf("the project gained %s", e.Name())
		}
	}
	settings, _ := os.ReadFile(projectfs.SettingsFile(dir))
	if bytes.Contains(settings, []byte("sha256")) {
		t.Errorf("settings.json holds a digest: %s", settings)
	}
}

func writeDockerfile(t *testing.T, dir, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, projectfs.Dir, "Dockerfile"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// projectImageHarness is a harness with a browser image to build project
// Dockerfiles on.
func projectImageHarness(t *testing.T) *harness {
	return newHarness(t, func(c *Config) {
		c.BrowserResources = fstest.MapFS{"Dockerfile": {Data: []byte("ARG DESKTOP\nFROM ${DESKTOP}\n")}}
	})
}

func TestProjectDockerfileNeedsApproval(t *testing.T) {
	h := projectImageHarness(t)
	dir := project(t)
	ctx := context.Background()
	writeSettings(t, dir, `{"sandbox": {"image": {"dockerfile": ".pilot/Dockerfile"}}}`)
	writeDockerfile(t, dir, "ARG PILOT_BASE\nFROM ${PILOT_BASE}\nUSER root\nRUN touch /made-as-root\n")
	os.WriteFile(filepath.Join(dir, projectfs.Dir, "extra.txt"), []byte("copied"), 0o644)
	asked := h.approvalAsked(dir, ApprovalDockerfile)
	if !strings.Contains(asked.Summary, "build .pilot/Dockerfile (") || !strings.Contains(asked.Summary, "2 files") {
		t.Errorf("summary %q", asked.Summary)
	}
	if len(h.docker.builds) != 0 {
		t.Fatalf("built %d images before the approval", len(h.docker.builds))
	}
	if err := h.m.Approve(ctx, dir, asked.Digest); err != nil {
		t.Fatal(err)
	}
	assertStateOnly(t, h.m, dir)
	first := h.assertRunsItsOwnImage(dir)
	// A changed Dockerfile applies to a new sandbox: a restart says so.
	h.m.Stop(ctx, dir)
	writeDockerfile(t, dir, "ARG PILOT_BASE\nFROM ${PILOT_BASE}\nRUN true\n")
	h.drain()
	if _, err := h.m.Start(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if !said(h.drain(), ".pilot/Dockerfile changed since this sandbox was made") {
		t.Errorf("a restart with a changed Dockerfile did not say it applies to a new sandbox")
	}
	// Removing the sandbox removes its image; a changed Dockerfile asks again.
	if _, err := h.m.Remove(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := h.docker.ImageLabels(ctx, first.Tag); !errors.Is(err, ErrImageNotFound) {
		t.Errorf("the project's image outlived its sandbox: %v", err)
	}
	writeDockerfile(t, dir, "ARG PILOT_BASE\nFROM ${PILOT_BASE}\nUSER root\nRUN touch /made-again\n")
	// Approved, the changed Dockerfile builds under a new hash.
	if err := h.m.Approve(ctx, dir, h.approvalAsked(dir, ApprovalDockerfile).Digest); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.Start(ctx, dir); err != nil {
		t.Fatal(err)
	}
	rebuilt := h.docker.builds[len(h.docker.builds)-1]
	if rebuilt.Tag != first.Tag || rebuilt.Labels[images.LabelHash] == first.Labels[images.LabelHash] || rebuilt.Labels[LabelProject] != dir {
		t.Errorf("rebuilt %s with %v, first hash %s", rebuilt.Tag, rebuilt.Labels, first.Labels[images.LabelHash])
	}
	// The earlier approval no longer stands: content changed back asks again.
	writeDockerfile(t, dir, "ARG PILOT_BASE\nFROM ${PILOT_BASE}\nUSER root\nRUN touch /made-as-root\n")
	if pending, err := h.m.Pending(ctx, dir); err != nil || len(pending) != 1 {
		t.Errorf("pending after changing back: %+v %v", pending, err)
	}
}

// approvalAsked starts the project's sandbox, which must wait for an
// approval of kind, and returns it.
func (h *harness) approvalAsked(dir, kind string) Approval {
	h.t.Helper()
	_, err := h.m.Start(context.Background(), dir)
	var ae *ApprovalError
	if !errors.As(err, &ae) || ae.Approval.Kind != kind {
		h.t.Fatalf("start: %v, want a %s approval asked", err, kind)
	}
	return ae.Approval
}

// assertRunsItsOwnImage starts the project's sandbox and checks that it
// runs the project's own image: built from .pilot/ (the Dockerfile and
// extra.txt, not the state files) on the browser image, with the browser
// image's entrypoint and seccomp profile and a user other than root. It
// returns the build.
func (h *harness) assertRunsItsOwnImage(dir string) images.BuildSpec {
	t := h.t
	t.Helper()
	st, err := h.m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	tag := images.ProjectTag(h.m.cfg.Image, ContainerName(dir))
	last := h.docker.builds[len(h.docker.builds)-1]
	if st.Image != tag || last.Tag != tag || last.BuildArgs["PILOT_BASE"] != h.m.cfg.BrowserImage || last.Dockerfile != "Dockerfile" {
		t.Errorf("state image %s; build %+v", st.Image, last)
	}
	if names := tarNames(t, h.docker.buildTars[len(h.docker.buildTars)-1]); !slices.Equal(names, []string{"Dockerfile", "extra.txt"}) {
		t.Errorf("context %q, want the Dockerfile and extra.txt (not settings.json or sandbox.json)", names)
	}
	spec := h.docker.specs[st.ContainerID]
	if spec.User == "" || spec.User == "root" || !slices.Equal(spec.Entrypoint, []string{images.Entrypoint}) {
		t.Errorf("container user %q entrypoint %q", spec.User, spec.Entrypoint)
	}
	if spec.Seccomp != h.m.cfg.Seccomp {
		t.Errorf("seccomp not the browser's")
	}
	return last
}

// said says whether a progress event among events says text.
func said(events []Event, text string) bool {
	return slices.ContainsFunc(events, func(ev Event) bool {
		return ev.Kind == EventProgress && strings.Contains(ev.Progress.Message, text)
	})
}

func tarNames(t *testing.T, data []byte) []string {
	t.Helper()
	var names []string
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
	}
}

// A project that asks both gets them one at a time, in the order Pending
// lists them: the limits, then the Dockerfile.
func TestBothAsksOneAtATime(t *testing.T) {
	h := projectImageHarness(t)
	dir := project(t)
	ctx := context.Background()
	writeSettings(t, dir, `{"sandbox": {"image": {"dockerfile": ".pilot/Dockerfile"}, "cpus": 3}}`)
	writeDockerfile(t, dir, "ARG PILOT_BASE\nFROM ${PILOT_BASE}\n")
	pending, err := h.m.Pending(ctx, dir)
	if err != nil || len(pending) != 2 || pending[0].Kind != ApprovalLimits || pending[1].Kind != ApprovalDockerfile {
		t.Fatalf("pending %+v, %v", pending, err)
	}
	for _, want := range pending {
		_, err := h.m.Start(ctx, dir)
		var ae *ApprovalError
		if !errors.As(err, &ae) || !reflect.DeepEqual(ae.Approval, want) {
			t.Fatalf("start: %v, want it to ask %+v", err, want)
		}
		if err := h.m.Approve(ctx, dir, want.Digest); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.m.Start(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if pending, _ := h.m.Pending(ctx, dir); len(pending) != 0 {
		t.Errorf("still pending: %+v", pending)
	}
}

// TestApprovalsShowWhatTheyApprove: a Dockerfile's approval carries its
// text, the files it copies, its warnings; once approved and changed, the
// next asks with the diff against what was approved; a limits approval
// carries the limits against the caps. A Dockerfile that fetches a URL
// with ADD is not built at all, approved or not.
func TestApprovalsShowWhatTheyApprove(t *testing.T) {
	h := projectImageHarness(t)
	dir := project(t)
	ctx := context.Background()
	writeSettings(t, dir, `{"sandbox": {"image": {"dockerfile": ".pilot/Dockerfile"}, "memory": "8g"}}`)
	first := "ARG PILOT_BASE\nFROM ${PILOT_BASE}\nCOPY setup.sh /tmp/\nARG MIRROR=http://192.168.1.5/debian\nRUN sh /tmp/setup.sh\n"
	writeDockerfile(t, dir, first)
	os.WriteFile(filepath.Join(dir, ".pilot", "setup.sh"), []byte("apt-get install -y jq\n"), 0o644)
	pending, err := h.m.Pending(ctx, dir)
	if err != nil || len(pending) != 2 {
		t.Fatalf("pending %+v, %v", pending, err)
	}
	limits, df := pending[0], pending[1]
	if limits.Content != "memory     8g       your cap: 4GiB\n" || limits.Diff != "" {
		t.Errorf("the limits' content %q, diff %q", limits.Content, limits.Diff)
	}
	wantFiles := []images.ShownFile{{Path: ".pilot/setup.sh", Size: 22, Text: "apt-get install -y jq\n"}}
	if df.Content != first || !reflect.DeepEqual(df.Files, wantFiles) || df.Diff != "" ||
		!reflect.DeepEqual(df.Warnings, []string{"line 4: ARG names 192.168.1.5, an address of this machine or its network"}) {
		t.Errorf("the Dockerfile's approval: %+v", df)
	}
	for _, a := range pending {
		if err := h.m.Approve(ctx, dir, a.Digest); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, ".pilot", "setup.sh"), []byte("apt-get install -y jq curl\n"), 0o644)
	_, err = h.m.Start(ctx, dir)
	var ae *ApprovalError
	if !errors.As(err, &ae) || ae.Approval.Kind != ApprovalDockerfile {
		t.Fatalf("a start after a change: %v", err)
	}
	const diff = "--- approved\n+++ asked now\n@@ -4,5 +4,5 @@\n ARG MIRROR=http://192.168.1.5/debian\n RUN sh /tmp/setup.sh\n \n" +
		"-==> .pilot/setup.sh (22 bytes) <==\n-apt-get install -y jq\n+==> .pilot/setup.sh (27 bytes) <==\n+apt-get install -y jq curl\n"
	if ae.Approval.Diff != diff {
		t.Errorf("diff:\n%s\nwant:\n%s", ae.Approval.Diff, diff)
	}
	if err := h.m.Approve(ctx, dir, ae.Approval.Digest); err != nil {
		t.Fatal(err)
	}
	writeDockerfile(t, dir, first+"ADD http://127.0.0.1:8000/key /key\n")
	_, err = h.m.Start(ctx, dir)
	var ce *projectfs.ConfigError
	if !errors.As(err, &ce) || ce.Field != "sandbox.image" || !strings.Contains(ce.Reason, "line 6 has ADD fetch http://127.0.0.1:8000/key") {
		t.Errorf("a Dockerfile with ADD of a URL: %v", err)
	}
	if _, err := h.m.Pending(ctx, dir); !errors.As(err, &ce) {
		t.Errorf("its approval: %v, want the same refusal", err)
	}
}
