package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// The attacks of issue 16 that need a real sandbox or a real sidecar: what
// runs in the sandbox writing into the desktop agent's output, and a
// repository's .pilot pointing where it should not. Each runs the sidecar
// under a memory guard, so that a regression fails the test instead of
// taking the machine.

// memoryLimit is far above what a sidecar needs (tens of MiB) and far below
// what the attacks took before they were stopped (895 MB to several GB).
const memoryLimit = 256 << 20

// procStatus reads a field of /proc/<pid>/status, in bytes ("VmHWM").
func procStatus(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// guardMemory kills the sidecar, failing the test, when its resident memory
// passes memoryLimit; it returns the peak so far (VmHWM).
func guardMemory(t *testing.T, s *sidecar) (peak func() int64) {
	t.Helper()
	pid := s.cmd.Process.Pid
	if _, err := procStatus(pid, "VmHWM"); err != nil {
		t.Skipf("no /proc to watch the sidecar's memory: %v", err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if rss, err := procStatus(pid, "VmRSS"); err == nil && rss > memoryLimit {
				s.cmd.Process.Kill()
				t.Errorf("the sidecar grew to %d MiB: killed it", rss>>20)
				return
			}
		}
	}()
	return func() int64 {
		hwm, _ := procStatus(pid, "VmHWM")
		return hwm
	}
}

// findAgent starts the Python programs the tests run in the sandbox:
// agent_stdout finds the desktop agent and opens its stdout.
const findAgent = `
import os
def agent_stdout(flags):
    agents = []
    for pid in os.listdir('/proc'):
        try:
            argv = open('/proc/%s/cmdline' % pid, 'rb').read().split(b'\0')
        except OSError:
            continue
        if pid.isdigit() and argv[:4] == [b'python3', b'-I', b'-u', b'-c']:
            agents.append(int(pid))
    return os.open('/proc/%d/fd/1' % max(agents), os.O_WRONLY | flags)
`

// runPython runs a program as the desktop's user, past the sidecar: the
// sandbox's own user can no longer open the agent's stdout (the two-users
// tests in service check that), so these tests of the sidecar's bounds
// stand for a desktop process gone bad.
func runPython(t *testing.T, s *sidecar, project, program string) string {
	t.Helper()
	st := result(t, s.call("sandbox/status", map[string]any{"projectPath": project}, time.Minute))
	id, _ := st["containerId"].(string)
	res, err := dockertest.Engine(t).Exec(context.Background(), id, service.ExecSpec{
		Cmd: []string{"python3", "-"}, Stdin: strings.NewReader(findAgent + program),
		User: desktop.DesktopUser, Timeout: 2 * time.Minute,
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("in the sandbox: %v %+v %s", err, res, res.Stderr)
	}
	return strings.TrimSpace(string(res.Stdout))
}

// screenshot asks the sidecar for one, and returns its error's message, or
// "" and the PNG's size.
func screenshot(t *testing.T, s *sidecar, project string) (failure string, width, height float64) {
	t.Helper()
	msg := s.call("sandbox/screenshot", map[string]any{"projectPath": project}, time.Minute)
	if e, ok := msg["error"].(map[string]any); ok {
		return e["message"].(string), 0, 0
	}
	r := result(t, msg)
	w, _ := r["width"].(float64)
	h, _ := r["height"].(float64)
	return "", w, h
}

// The sandbox writes one endless line (200 MiB, no newline) into the
// agent's stdout while no request waits (issue 16: the sidecar went to
// 895 MB). The sidecar reads no more than its bound, closes that agent, and
// the next screenshot comes from a new one.
func TestFaultSandboxFloodsTheAgentOutput(t *testing.T) {
	docker := dockertest.Engine(t)
	project := dockertest.Project(t, docker)
	s := startSidecar(t, "ndjson")
	peak := guardMemory(t, s)
	result(t, s.call("initialize", map[string]any{}, 20*time.Second))
	result(t, s.call("sandbox/start", map[string]any{"projectPath": project}, 5*time.Minute))
	if failure, _, _ := screenshot(t, s, project); failure != "" { // starts the agent
		t.Fatal(failure)
	}
	before := peak()
	written := runPython(t, s, project, `
import select
fd = agent_stdout(os.O_NONBLOCK)
chunk, total = b'a' * 65536, 0
while total < 200 << 20:
    # Write as fast as the sidecar reads; stop once it has read nothing for 2 s.
    if not select.select([], [fd], [], 2)[1]:
        break
    try:
        total += os.write(fd, chunk)
    except BlockingIOError:
        pass
print(total)
`)
	failure, w, h := screenshot(t, s, project)
	after := peak()
	n, _ := strconv.Atoi(written)
	t.Logf("the sandbox wrote %d KiB into the agent's output; the sidecar's peak memory went from %d to %d MiB",
		n>>10, before>>20, after>>20)
	if failure != "" || w != 1280 || h != 800 {
		t.Errorf("the screenshot after the flood: %q, %vx%v", failure, w, h)
	}
	if after-before > 64<<20 {
		t.Errorf("the flood grew the sidecar by %d MiB", (after-before)>>20)
	}
}

// The sandbox forges the agent's answer to the next screenshot: a 31 KiB
// PNG claiming 16000x16000, whose decoding takes 256 MB (issue 16: a forged
// PNG was decoded in 5.6 s and 1.8 GB). The agent tool refuses it by its
// header, and the next screenshot is the display's.
func TestFaultSandboxForgesAScreenshot(t *testing.T) {
	docker := dockertest.Engine(t)
	project := dockertest.Project(t, docker)
	s := startSidecar(t, "ndjson")
	peak := guardMemory(t, s)
	result(t, s.call("initialize", map[string]any{}, 20*time.Second))
	result(t, s.call("sandbox/start", map[string]any{"projectPath": project}, 5*time.Minute))
	result(t, s.call("sandbox/setToolsEnabled", map[string]any{"projectPath": project, "enabled": true}, 10*time.Second))
	shoot := func() (failure string, image bool) {
		msg := s.call("tools/call", map[string]any{"projectPath": project, "name": "sandbox_screenshot"}, 2*time.Minute)
		if e, ok := msg["error"].(map[string]any); ok {
			return e["message"].(string), false
		}
		r := result(t, msg)
		for _, c := range r["content"].([]any) {
			c := c.(map[string]any)
			if r["isError"] == true {
				return c["text"].(string), false
			}
			image = image || c["type"] == "image"
		}
		return "", image
	}
	// The agent's first request is hello (1), the screenshot 2: the next is 3.
	if failure, image := shoot(); failure != "" || !image {
		t.Fatalf("first screenshot: %q", failure)
	}
	before := peak()
	size := runPython(t, s, project, `
import json, struct, zlib
def chunk(kind, data):
    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))
side = 16000
z = zlib.compressobj(9)
idat = b''.join(z.compress(b'\0' * (1 + side // 8)) for _ in range(side)) + z.flush()
png = (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', side, side, 1, 0, 0, 0, 0))
       + chunk(b'IDAT', idat) + chunk(b'IEND', b''))
# As the agent answers (agent.py, encode): the PNG as a frame, then the line.
line = json.dumps({'id': 3, 'width': 1280, 'height': 800}) + '\n'
os.write(agent_stdout(0), b'=%d\n' % len(png) + png + line.encode())
print(len(png))
`)
	failure, image := shoot()
	after := peak()
	t.Logf("a forged %s-byte PNG of 16000x16000: %q; the sidecar's peak memory went from %d to %d MiB", size, failure, before>>20, after>>20)
	if image || !strings.Contains(failure, "16000x16000") || !strings.Contains(failure, "1280x800") {
		t.Errorf("the forged screenshot: %q, image %v", failure, image)
	}
	if after-before > 64<<20 {
		t.Errorf("the forged screenshot grew the sidecar by %d MiB", (after-before)>>20)
	}
	if failure, image := shoot(); failure != "" || !image {
		t.Errorf("the screenshot after the forged one: %q", failure)
	}
}

// A repository's .pilot points where it should not (issue 16): a running
// sandbox's sandbox.json is made a link to /dev/zero (which killed every
// later serve), its settings.json a link to the sidecar's own stdin (which
// swallowed the client's requests); another project's .pilot is a link to
// the user's VS Code settings (which the tools switch set aside and
// replaced), a third's settings.json a link to the user's Docker
// credentials (which the switch copied into the repository). A new sidecar
// serves on, reports each file as refused, reads them as absent and writes
// none of them.
func TestHostileProjectFilesAreRefused(t *testing.T) {
	docker := dockertest.Engine(t)
	running := dockertest.Project(t, docker)
	vscode, docked := dockertest.Project(t, docker), dockertest.Project(t, docker)
	home, credentials, userSettings := userHome(t)
	homeBefore := listTree(t, home)

	env := []string{"XDG_STATE_HOME=" + t.TempDir(), ownScope(t)}
	first := startSidecar(t, "ndjson", env...)
	st := result(t, first.call("sandbox/start", map[string]any{"projectPath": running}, 5*time.Minute))
	result(t, first.call("shutdown", nil, 10*time.Second))
	first.write(map[string]any{"method": "exit"})
	first.wait()

	pilot := func(p, name string) string { return filepath.Join(p, ".pilot", name) }
	os.Remove(pilot(running, "sandbox.json"))
	mustSymlink(t, "/dev/zero", pilot(running, "sandbox.json"))
	mustSymlink(t, "/proc/self/fd/0", pilot(running, "settings.json"))
	mustSymlink(t, userSettings, filepath.Join(vscode, ".pilot"))
	os.MkdirAll(filepath.Join(docked, ".pilot"), 0o755)
	mustSymlink(t, credentials, pilot(docked, "settings.json"))

	s := startSidecar(t, "ndjson", env...)
	peak := guardMemory(t, s)
	result(t, s.call("initialize", map[string]any{}, 20*time.Second))
	w := s.waitNotification("sandbox/warning", func(w map[string]any) bool {
		return w["file"] == pilot(running, "sandbox.json")
	}, time.Minute)
	if w["problem"] != "refused" || !strings.Contains(w["message"].(string), "symbolic link (to /dev/zero)") {
		t.Errorf("warning for sandbox.json: %v", w)
	}
	if now := result(t, s.call("sandbox/status", map[string]any{"projectPath": running}, time.Minute)); now["status"] != "running" || now["containerId"] != st["containerId"] {
		t.Errorf("status: %v", now)
	}
	on := result(t, s.call("sandbox/getToolsEnabled", map[string]any{"projectPath": running}, 20*time.Second))
	w = s.waitNotification("sandbox/warning", func(w map[string]any) bool {
		return w["file"] == pilot(running, "settings.json")
	}, time.Minute)
	if on["enabled"] != false || w["problem"] != "refused" || !strings.Contains(w["message"].(string), "/proc/self/fd/0") {
		t.Errorf("tools through a link to stdin: %v, warning %v", on, w)
	}
	// The client's requests still reach the sidecar.
	result(t, s.call("sandbox/status", map[string]any{"projectPath": running}, 20*time.Second))

	for _, p := range []string{vscode, docked} {
		assertRefusedWrite(t, s.call("sandbox/setToolsEnabled", map[string]any{"projectPath": p, "enabled": true}, 20*time.Second), pilot(p, "settings.json"))
	}
	if after := listTree(t, home); after != homeBefore {
		t.Errorf("the user's files changed:\n%s\nwere\n%s", after, homeBefore)
	}
	if target, err := os.Readlink(pilot(docked, "settings.json")); err != nil || target != credentials {
		t.Errorf("the link to the credentials was replaced: %q, %v", target, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(docked, ".pilot")); len(entries) != 1 {
		t.Errorf("files written beside the link: %v", entries)
	}
	t.Logf("the sidecar's peak memory: %d MiB", peak()>>20)
}

// assertRefusedWrite: msg is -32007 for file, saying it is a link.
func assertRefusedWrite(t *testing.T, msg map[string]any, file string) {
	t.Helper()
	e, _ := msg["error"].(map[string]any)
	data, _ := e["data"].(map[string]any)
	if e == nil || e["code"] != -32007.0 || data["file"] != file || !strings.Contains(e["message"].(string), "symbolic link") {
		t.Errorf("a write through a link: %v", msg)
	}
}

// userHome makes a stand-in for the user's home: Docker credentials, and
// VS Code's settings directory.
func userHome(t *testing.T) (home, credentials, userSettings string) {
	home = t.TempDir()
	credentials = filepath.Join(home, ".docker", "config.json")
	userSettings = filepath.Join(home, ".config", "Code", "User")
	os.MkdirAll(filepath.Dir(credentials), 0o700)
	os.WriteFile(credentials, []byte(`{"auths": {"registry.example": {"auth": "c2VjcmV0OnRva2Vu"}}}`), 0o600)
	os.MkdirAll(userSettings, 0o700)
	os.WriteFile(filepath.Join(userSettings, "settings.json"), []byte("{\n  // mine\n  \"editor.fontSize\": 14,\n}\n"), 0o600)
	return home, credentials, userSettings
}

// ownScope gives a test's sidecars a scope of their own: another sidecar
// following the test scope (another test's, run beside this one) would
// otherwise reconcile this test's sandbox too, and report or rewrite its
// .pilot files to its own client before this test's sidecar sees them.
// The scope's sandboxes and network go with the test.
func ownScope(t *testing.T) string {
	scope := dockertest.TestScope + "-" + strings.ToLower(t.Name())
	t.Cleanup(func() { dockertest.RemoveScope(t, dockertest.Engine(t), scope) })
	return "PILOT_SCOPE=" + scope
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// listTree is every file under dir with its contents.
func listTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			data, _ := os.ReadFile(path)
			fmt.Fprintf(&b, "%s %v %q\n", path, info.Mode(), data)
		}
		return nil
	})
	return b.String()
}
