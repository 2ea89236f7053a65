package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/rfbtest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/sshtest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/tcptest"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// TestServeOnARemoteEngine runs serve against the engine as a remote one
// (DOCKER_HOST=ssh://..., an sshd of the test's own in front of this
// machine's engine) and uses a sandbox as the app would: start, the
// viewer and its first picture, agent tools, exec, files, the user's dev
// server forwarded into the sandbox, a port exposed out of it, and the
// browser's DevTools. The "remote" is this machine, so the test proves
// that nothing took a local shortcut: the container publishes no port,
// and the viewer's port is a listener of the sidecar's own.
func TestServeOnARemoteEngine(t *testing.T) {
	direct := dockertest.Engine(t)
	server := sshtest.Start(t, sshtest.Options{})
	project := dockertest.Project(t, direct)
	os.MkdirAll(filepath.Join(project, projectfs.Dir), 0o755)
	settings := `{"dockerToolsEnabled": true, "sandbox": {"image": "browser"}}`
	if err := os.WriteFile(projectfs.SettingsFile(project), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	// A locked network policy: the enforcement's helper container joins
	// the sandbox's namespace through the remote engine too.
	config := writeConfig(t.TempDir(), "locked", `{"maxRunning": 0, "network": {"preset": "locked"}}`)
	env := append(server.Env(), "XDG_STATE_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+config)
	s := startSidecar(t, "lsp", env...)
	init := result(t, s.call("initialize", map[string]any{}, time.Minute))
	if docker := init["docker"].(map[string]any); docker["available"] != true || docker["endpoint"] != server.Endpoint() {
		t.Fatalf("initialize: %v", docker)
	}
	p := map[string]any{"projectPath": project}
	st := result(t, s.call("sandbox/start", p, 5*time.Minute))
	if st["status"] != "running" || st["carried"] != true {
		t.Fatalf("start: %v", st)
	}
	id := st["containerId"].(string)

	t.Run("nothing is published: the viewer is the sidecar's", func(t *testing.T) {
		c, err := direct.InspectContainer(context.Background(), id)
		if err != nil || !c.Running || len(c.Ports) != 0 || len(c.HostIPs) != 0 {
			t.Errorf("the container publishes %v on %v (%v)", c.Ports, c.HostIPs, err)
		}
		port := int(st["wsPort"].(float64))
		if !listensIn(t, s.cmd.Process.Pid, port) {
			t.Errorf("the viewer's port %d is not the sidecar's", port)
		}
	})
	t.Run("viewer", func(t *testing.T) {
		viewer := st["viewerUrl"].(string)
		if code, page := httpGet(t, viewer); code != http.StatusOK || !strings.Contains(page, "<html") {
			t.Errorf("GET the viewer: %d %.200q", code, page)
		}
		c, err := rfbtest.DialViewer(viewer, time.Minute)
		if err != nil {
			t.Fatalf("the viewer's VNC: %v", err)
		}
		defer c.Close()
		if err := c.Sync(time.Minute); err != nil {
			t.Errorf("the first picture: %v", err)
		}
	})
	t.Run("tools", func(t *testing.T) {
		shot := result(t, s.call("tools/call", map[string]any{"projectPath": project, "name": "sandbox_screenshot", "arguments": map[string]any{}}, time.Minute))
		content, _ := shot["content"].([]any)
		if shot["isError"] != false || len(content) == 0 || content[0].(map[string]any)["type"] != "image" {
			t.Errorf("screenshot: %.300v", shot)
		}
		click := result(t, s.call("tools/call", map[string]any{"projectPath": project, "name": "sandbox_click", "arguments": map[string]any{"x": 10, "y": 10}}, time.Minute))
		if click["isError"] != false {
			t.Errorf("click: %v", click)
		}
	})
	t.Run("exec and files", func(t *testing.T) {
		out := result(t, s.call("sandbox/exec", map[string]any{"projectPath": project, "command": "echo $((6*7)) && whoami"}, time.Minute))
		if out["stdout"] != "42\nsandbox\n" || out["exitCode"] != 0.0 {
			t.Errorf("exec: %v", out)
		}
		result(t, s.call("sandbox/files/write", map[string]any{"projectPath": project, "path": "notes/a.txt", "text": "kept remote", "createParents": true}, time.Minute))
		read := result(t, s.call("sandbox/files/read", map[string]any{"projectPath": project, "path": "notes/a.txt"}, time.Minute))
		if data, _ := base64.StdEncoding.DecodeString(read["data"].(string)); string(data) != "kept remote" {
			t.Errorf("read: %v", read)
		}
	})
	t.Run("the network policy is enforced", func(t *testing.T) {
		if out, ok := enforced(t, s, project); !ok {
			t.Errorf("the sandbox's connections under a locked policy: %v", out)
		}
	})
	devServer := tcptest.Serve(t, "127.0.0.1:0", func(c net.Conn) { fmt.Fprint(c, "from the user's machine\n") })
	t.Run("the user's dev server, forwarded", func(t *testing.T) {
		result(t, s.call("sandbox/ports/forward", map[string]any{"projectPath": project, "port": 3000, "hostPort": devServer.Port}, time.Minute))
		if out, ok := forwarded(t, s, project); !ok {
			t.Errorf("the forwarded port inside: %v", out)
		}
	})
	var exposedURL string
	t.Run("a port exposed", func(t *testing.T) {
		serve := "mkdir -p /tmp/site && echo exposed > /tmp/site/index.html && cd /tmp/site && python3 -m http.server --bind 127.0.0.1 8000"
		result(t, s.call("sandbox/exec", map[string]any{"projectPath": project, "command": serve, "background": true}, time.Minute))
		exposed := result(t, s.call("sandbox/ports/expose", map[string]any{"projectPath": project, "port": 8000}, time.Minute))
		exposedURL = exposed["url"].(string)
		// The server in the sandbox takes a moment to listen.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			code, body := httpGet(t, exposed["url"].(string))
			if code == http.StatusOK && body == "exposed\n" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET the exposed port: %d %q", code, body)
			}
		}
	})
	t.Run("DevTools", func(t *testing.T) {
		ws := result(t, s.call("sandbox/browser", p, 2*time.Minute))["wsEndpoint"].(string)
		conn, _, err := websocket.DefaultDialer.Dial(ws, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetReadDeadline(time.Now().Add(time.Minute))
		var reply struct {
			ID     int
			Result struct{ Product string }
		}
		if err := conn.WriteJSON(map[string]any{"id": 1, "method": "Browser.getVersion"}); err != nil {
			t.Fatal(err)
		}
		if err := conn.ReadJSON(&reply); err != nil || !strings.Contains(reply.Result.Product, "Chrom") {
			t.Errorf("Browser.getVersion: %+v, %v", reply, err)
		}
	})
	t.Run("doctor says how the engine is reached", func(t *testing.T) {
		out, errOut, code := cliRun(t, env, "", "doctor")
		if !strings.Contains(out, "ok   Docker") || !strings.Contains(out, "ssh to "+server.User()+"@127.0.0.1") ||
			!strings.Contains(out, "forwarded to") || !strings.Contains(out, "on another machine") {
			t.Errorf("doctor (%d): %s %s", code, out, errOut)
		}
	})
	t.Run("the link drops under a call", func(t *testing.T) {
		dropUnderACall(t, s, server, project, id)
		// Nothing is lost: the sandbox, its files, the agent's tools and
		// the viewer work again on the next calls.
		out := result(t, s.call("sandbox/exec", map[string]any{"projectPath": project, "command": "cat notes/a.txt"}, time.Minute))
		if out["stdout"] != "kept remote" {
			t.Errorf("exec after the drop: %v", out)
		}
		shot := result(t, s.call("tools/call", map[string]any{"projectPath": project, "name": "sandbox_screenshot", "arguments": map[string]any{}}, time.Minute))
		if shot["isError"] != false {
			t.Errorf("screenshot after the drop: %.300v", shot)
		}
		// The network's helper went with the link; another takes its
		// place (egress: retake), and until then nothing gets out.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
			out, ok := enforced(t, s, project)
			if ok {
				break
			}
			if stdout, _ := out["stdout"].(string); strings.Contains(stdout, "proxy: 200") || time.Now().After(deadline) {
				t.Fatalf("the network policy after the drop: %v", out)
			}
		}
		// The forward's listener in the sandbox went with the link too,
		// and is started again once the engine answers.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
			out, ok := forwarded(t, s, project)
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the forwarded port after the drop: %v", out)
			}
		}
		if code, body := httpGet(t, exposedURL); code != http.StatusOK || body != "exposed\n" {
			t.Errorf("the exposed port after the drop: %d %q", code, body)
		}
		st := result(t, s.call("sandbox/status", p, time.Minute))
		c, err := rfbtest.DialViewer(st["viewerUrl"].(string), time.Minute)
		if err != nil {
			t.Fatalf("the viewer after the drop: %v (%v)", err, st)
		}
		defer c.Close()
		if err := c.Sync(time.Minute); err != nil {
			t.Errorf("a picture after the drop: %v", err)
		}
	})
	stopped := result(t, s.call("sandbox/stop", p, 2*time.Minute))
	if stopped["status"] != "stopped" {
		t.Errorf("stop: %v", stopped)
	}
	again := result(t, s.call("sandbox/start", p, 5*time.Minute))
	if again["status"] != "running" || again["containerId"] != id {
		t.Errorf("start again: %v", again)
	}
	out := result(t, s.call("sandbox/exec", map[string]any{"projectPath": project, "command": "cat notes/a.txt"}, time.Minute))
	if out["stdout"] != "kept remote" {
		t.Errorf("the files after a stop and start: %v", out)
	}
	if removed := result(t, s.call("sandbox/remove", p, 2*time.Minute)); removed["removed"] != true {
		t.Errorf("remove: %v", removed)
	}
}

// listensIn says whether the process pid holds the TCP socket listening
// on 127.0.0.1:port (read from /proc: its inode among the process's
// descriptors).
func listensIn(t *testing.T, pid, port int) bool {
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Skipf("no /proc/net/tcp: %v", err)
	}
	want := fmt.Sprintf("0100007F:%04X", port)
	inode := ""
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 9 && f[1] == want && f[3] == "0A" {
			inode = f[9]
		}
	}
	if inode == "" {
		return false
	}
	fds, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/fd/*")
	for _, fd := range fds {
		if target, _ := os.Readlink(fd); target == "socket:["+inode+"]" {
			return true
		}
	}
	return false
}

// dropUnderACall drops the link while an exec runs: the call fails as
// docker_unavailable, saying the ssh connection dropped and that the next
// call connects again.
func dropUnderACall(t *testing.T, s *sidecar, server *sshtest.Server, project, id string) {
	t.Helper()
	// One call at a time: s reads its answers from one stream. The test
	// sees the exec run through the engine's own socket.
	direct := dockertest.Engine(t)
	answered := make(chan map[string]any, 1)
	go func() {
		answered <- s.call("sandbox/exec", map[string]any{"projectPath": project, "command": "touch /tmp/long && sleep 30"}, 2*time.Minute)
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		out, err := direct.Exec(context.Background(), id, service.ExecSpec{Cmd: []string{"test", "-e", "/tmp/long"}})
		if err == nil && out.ExitCode == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the long exec never ran")
		}
	}
	server.Link().Drop()
	msg := <-answered
	e, _ := msg["error"].(map[string]any)
	if errorKind(msg) != "docker_unavailable" || !strings.Contains(fmt.Sprint(e["message"]), "dropped") ||
		!strings.Contains(fmt.Sprint(e["message"]), "the next call connects again") {
		t.Errorf("the exec under the drop: %v", msg)
	}
}

// enforced tries a connection through the proxy the sandbox is given and
// one that ignores it, under a locked policy: both must get the 403.
func enforced(t *testing.T, s *sidecar, project string) (map[string]any, bool) {
	out := result(t, s.call("sandbox/exec", map[string]any{"projectPath": project, "command": `python3 -c '
import socket, urllib.request, urllib.error
try:
    urllib.request.urlopen("http://example.test/", timeout=20)
    print("proxy: 200")
except urllib.error.HTTPError as e:
    print("proxy:", e.code)
except OSError as e:
    print("proxy failed:", e)
try:
    c = socket.create_connection(("192.0.2.10", 80), timeout=10)
    c.sendall(b"GET / HTTP/1.0\r\nHost: raw.test\r\n\r\n")
    print("raw:", c.recv(200).decode().splitlines()[0])
except OSError as e:
    print("raw failed:", e)
'`}, time.Minute))
	stdout, _ := out["stdout"].(string)
	return out, strings.Contains(stdout, "proxy: 403") && strings.Contains(stdout, "raw: HTTP/1.1 403 ")
}

// forwarded reads a line from the sandbox's localhost:3000, forwarded to
// the test's server.
func forwarded(t *testing.T, s *sidecar, project string) (map[string]any, bool) {
	read := `python3 -c 'import socket; print(socket.create_connection(("127.0.0.1", 3000), timeout=10).makefile().readline().strip())'`
	out := result(t, s.call("sandbox/exec", map[string]any{"projectPath": project, "command": read}, time.Minute))
	return out, out["stdout"] == "from the user's machine\n"
}
