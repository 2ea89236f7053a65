package service_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// inspected is the part of `docker inspect` the lockdown is made of.
type inspected struct {
	Config struct {
		User string
	}
	HostConfig struct {
		Privileged      bool
		CapAdd          []string
		CapDrop         []string
		SecurityOpt     []string
		Binds           []string
		Mounts          []json.RawMessage
		Devices         []json.RawMessage
		VolumesFrom     []string
		NetworkMode     string
		PidMode         string
		IpcMode         string
		UTSMode         string
		UsernsMode      string
		Init            *bool
		ReadonlyPaths   []string
		Memory          int64
		MemorySwap      int64
		NanoCpus        int64
		PidsLimit       *int64
		ShmSize         int64
		PublishAllPorts bool
		PortBindings    map[string][]struct{ HostIp, HostPort string }
	}
	Mounts []json.RawMessage
}

// TestSandboxIsLockedDown checks the container's configuration as Docker
// reports it, then looks inside the running sandbox: every process (the
// init, the desktop, an exec) runs as the unprivileged user with no
// capabilities and no_new_privs, nothing can gain privileges, and no host
// directory is mounted.
func TestSandboxIsLockedDown(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	api := dockertest.NewAPI(t)
	dir := dockertest.Project(t, docker)
	st, err := m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}

	var c inspected
	api.GetJSON("/containers/"+st.ContainerID+"/json", &c)
	assertConfigLockedDown(t, c)
	for _, p := range processes(t, m, dir) {
		assertProcessLockedDown(t, p)
	}
	for _, tc := range []struct {
		what, command, want string
	}{
		{"the exec's user", "id -u; id -g", "1000\n1000\n"},
		{"set-user-ID or set-group-ID files", "find / -xdev -type f -perm /6000 2>/dev/null", ""},
		{"a way to root", "su -c id root </dev/null 2>/dev/null || echo refused", "refused\n"},
		{"mounts of a host file system other than Docker's own files", hostMounts, ""},
	} {
		if out := exec(t, m, dir, tc.command); out.Stdout != tc.want {
			t.Errorf("%s: %q, want %q (stderr %q)", tc.what, out.Stdout, tc.want, out.Stderr)
		}
	}
}

// assertConfigLockedDown checks a sandbox's container as Docker reports it.
func assertConfigLockedDown(t *testing.T, c inspected) {
	t.Helper()
	h := c.HostConfig
	checks := []struct {
		what string
		ok   bool
	}{
		{"runs as the image's user desktop", c.Config.User == "desktop"},
		{"not privileged", !h.Privileged},
		{"every capability dropped, none added", slices.Equal(h.CapDrop, []string{"ALL"}) && len(h.CapAdd) == 0},
		{"no-new-privileges", slices.Contains(h.SecurityOpt, "no-new-privileges")},
		{"no host directory or volume mounted", len(h.Binds) == 0 && len(h.Mounts) == 0 && len(c.Mounts) == 0 && len(h.VolumesFrom) == 0},
		{"no host device", len(h.Devices) == 0},
		{"no host namespace shared", h.NetworkMode != "host" && h.PidMode == "" && h.IpcMode != "host" && h.UTSMode == "" && h.UsernsMode == ""},
		{"an init process reaps orphans", h.Init != nil && *h.Init},
		{"/proc paths masked read-only as Docker's default", len(h.ReadonlyPaths) > 0},
		{"the default limits", h.Memory == service.DefaultLimits.MemoryBytes && h.MemorySwap == h.Memory &&
			h.NanoCpus == service.DefaultLimits.NanoCPUs && h.PidsLimit != nil && *h.PidsLimit == service.DefaultLimits.PidsLimit &&
			h.ShmSize == service.DefaultLimits.ShmBytes},
		{"ports published on 127.0.0.1 only", !h.PublishAllPorts && len(h.PortBindings) == 2 &&
			h.PortBindings["5900/tcp"][0].HostIp == "127.0.0.1" && h.PortBindings["6080/tcp"][0].HostIp == "127.0.0.1"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("container configuration: want %s; HostConfig = %+v", c.what, h)
		}
	}
}

// assertProcessLockedDown checks one process of a sandbox: its user's,
// no capabilities, no_new_privs.
func assertProcessLockedDown(t *testing.T, p process) {
	t.Helper()
	// The desktop runs as desktop (1001); the exec listing them as
	// sandbox (1000).
	want := "1000 1000 1000 1000"
	if slices.Contains(desktopProcesses, p.comm) {
		want = "1001 1001 1001 1001"
	}
	if p.uid != want || p.gid != want {
		t.Errorf("%s (pid %s) runs as uid %q gid %q, want %s throughout", p.comm, p.pid, p.uid, p.gid, want[:4])
	}
	for name, v := range p.caps {
		if v != "0000000000000000" {
			t.Errorf("%s (pid %s) has %s %s, want none", p.comm, p.pid, name, v)
		}
	}
	if p.noNewPrivs != "1" {
		t.Errorf("%s (pid %s): NoNewPrivs %q, want 1", p.comm, p.pid, p.noNewPrivs)
	}
}

// hostMounts lists the mount points whose file system is not one of the
// container's own (its overlay root, proc, sys, tmpfs, cgroups): a host
// directory mounted into the sandbox would be one. Docker itself mounts
// three files of its own and its init binary.
const hostMounts = `awk '{ for (i = 7; $i != "-"; i++); print $5, $(i+1) }' /proc/self/mountinfo |
  grep -Ev ' (overlay|proc|sysfs|tmpfs|devpts|mqueue|cgroup|cgroup2)$' |
  grep -Ev '^/etc/(hosts|hostname|resolv.conf) |^/usr/sbin/docker-init ' || true`

// desktopProcesses are the processes of the desktop, which runs as the
// user desktop (pilot-clipboard is a thread of websockify's).
var desktopProcesses = []string{"docker-init", "pilot-desktop", "Xvfb", "fluxbox", "x11vnc", "websockify"}

// process is one process of the sandbox as /proc/PID/status shows it.
type process struct {
	pid, comm, uid, gid, noNewPrivs string
	caps                            map[string]string
}

// processes lists every process in the sandbox, the exec that lists them
// included.
func processes(t *testing.T, m *service.Manager, dir string) []process {
	t.Helper()
	out := exec(t, m, dir, `for s in /proc/[0-9]*/status; do echo; cat "$s" 2>/dev/null; done`)
	var procs []process
	for _, block := range strings.Split(out.Stdout, "\n\n") {
		p := process{caps: map[string]string{}}
		for _, line := range strings.Split(block, "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			v = strings.Join(strings.Fields(v), " ")
			switch {
			case k == "Pid":
				p.pid = v
			case k == "Name":
				p.comm = v
			case k == "Uid":
				p.uid = v
			case k == "Gid":
				p.gid = v
			case k == "NoNewPrivs":
				p.noNewPrivs = v
			case strings.HasPrefix(k, "Cap"):
				p.caps[k] = v
			}
		}
		if p.pid != "" {
			procs = append(procs, p)
		}
	}
	var names []string
	for _, p := range procs {
		names = append(names, p.comm)
	}
	for _, want := range desktopProcesses {
		if !slices.Contains(names, want) {
			t.Errorf("no %s among the sandbox's processes %v", want, names)
		}
	}
	return procs
}

// TestVNCPasswordsStayOutOfReach checks where the VNC passwords are: in the
// viewer addresses, and in a file in the container that only the desktop's
// group can read (x11vnc runs as desktop) and nothing in it can change. Nowhere else: not in
// anything `docker inspect` shows, the container's logs or any process's
// command line or environment, nor in the project directory or the
// sidecar's state directory. They are new at every start and differ
// between sandboxes.
func TestVNCPasswordsStayOutOfReach(t *testing.T) {
	stateDir := t.TempDir()
	m, docker := dockertest.Manager(t, func(c *service.Config) { c.StateDir = stateDir })
	api := dockertest.NewAPI(t)
	dir, other := dockertest.Project(t, docker), dockertest.Project(t, docker)
	ctx := context.Background()
	st, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	control, view := passwordOf(t, st.ViewerURL), passwordOf(t, st.WatchURL)
	if len(control) != 8 || len(view) != 8 || control == view {
		t.Fatalf("passwords %q and %q: want two different ones of 8 characters", control, view)
	}
	secrets := []string{control, view}

	logs, err := docker.Logs(ctx, st.ContainerID, 1000)
	if err != nil {
		t.Fatal(err)
	}
	places := map[string]string{
		"docker inspect":      string(api.Get("/containers/" + st.ContainerID + "/json")),
		"the container's log": strings.Join(logs, "\n"),
		"command lines and environments in the sandbox": exec(t, m, dir,
			`for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline; echo; tr '\0' '\n' < $p/environ; done 2>/dev/null`).Stdout,
		"the project directory":         filesUnder(t, dir),
		"the sidecar's state directory": filesUnder(t, stateDir),
	}
	assertNowhereIn(t, places, secrets)
	assertPasswordFileSealed(t, m, docker, dir, st.ContainerID, control, view)

	otherSt, err := m.Start(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Stop(ctx, dir); err != nil {
		t.Fatal(err)
	}
	again, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{passwordOf(t, otherSt.ViewerURL), passwordOf(t, otherSt.WatchURL), passwordOf(t, again.ViewerURL), passwordOf(t, again.WatchURL)} {
		if slices.Contains(secrets, s) {
			t.Errorf("password %q used again (another sandbox, or a restart)", s)
		}
		secrets = append(secrets, s)
	}
}

// assertNowhereIn checks that no secret is in the text of any place.
func assertNowhereIn(t *testing.T, places map[string]string, secrets []string) {
	t.Helper()
	for where, text := range places {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("a VNC password is in %s", where)
			}
		}
	}
}

// assertPasswordFileSealed checks the running sandbox's VNC password file
// as root sees it: root's, readable by the desktop's group only, holding
// the two passwords; and that the sandbox user can neither read, change,
// move nor add to it.
func assertPasswordFileSealed(t *testing.T, m *service.Manager, docker service.Docker, dir, id, control, view string) {
	t.Helper()
	asRoot := func(command string) string {
		res, err := docker.Exec(context.Background(), id, service.ExecSpec{Cmd: []string{"sh", "-c", command}, User: "root", Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return string(res.Stdout)
	}
	file := asRoot(`stat -c '%U:%G %a' /etc/pilot-sandbox/vnc /etc/pilot-sandbox/vnc/passwd; cat /etc/pilot-sandbox/vnc/passwd`)
	if want := "root:desktop 750\nroot:desktop 440\n" + control + "\n__BEGIN_VIEWONLY__\n" + view + "\n"; file != want {
		t.Errorf("password file:\n%s\nwant\n%s", file, want)
	}
	tamper := `cat /etc/pilot-sandbox/vnc/passwd; echo 'mine' > /etc/pilot-sandbox/vnc/passwd; mv /etc/pilot-sandbox/vnc/passwd /tmp/p;
	           rm -f /etc/pilot-sandbox/vnc/passwd; touch /etc/pilot-sandbox/vnc/new; ls /etc/pilot-sandbox/vnc`
	if out := exec(t, m, dir, tamper).Stdout; out != "" {
		t.Errorf("the sandbox read its VNC passwords: %q", out)
	}
	if out := asRoot(`head -1 /etc/pilot-sandbox/vnc/passwd; ls /etc/pilot-sandbox/vnc`); out != control+"\npasswd\n" {
		t.Errorf("the sandbox changed its own VNC passwords: %q", out)
	}
}

// passwordOf reads the password out of a viewer address's fragment.
func passwordOf(t *testing.T, url string) string {
	t.Helper()
	_, fragment, _ := strings.Cut(url, "#")
	for _, kv := range strings.Split(fragment, "&") {
		if v, ok := strings.CutPrefix(kv, "password="); ok {
			return v
		}
	}
	t.Fatalf("no password in %s", url)
	return ""
}

// filesUnder returns the names and contents of every file under dir.
func filesUnder(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		b.WriteString(path + "\n" + string(data) + "\n")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
