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
	env := append(server.Env(), "XDG_STATE_HOME="+t.TempDir())
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
	t.Run("the user's dev server, forwarded", func(t *testing.T) {
		addr := tcptest.Serve(t, "127.0.0.1:0", func(c net.Conn) { fmt.Fprint(c, "from the user's machine\n") })
		result(t, s.call("sandbox/ports/forward", map[string]any{"projectPath": project, "port": 3000, "hostPort": addr.Port}, time.Minute))
		read := `python3 -c 'import socket; print(socket.create_connection(("127.0.0.1", 3000), timeout=10).makefile().readline().strip())'`
		out := result(t, s.call("sandbox/exec", map[string]any{"projectPath": project, "command": read}, time.Minute))
		if out["stdout"] != "from the user's machine\n" {
			t.Errorf("the forwarded port inside: %v", out)
		}
	})
	t.Run("a port exposed", func(t *testing.T) {
		serve := "mkdir -p /tmp/site && echo exposed > /tmp/site/index.html && cd /tmp/site && python3 -m http.server --bind 127.0.0.1 8000"
		result(t, s.call("sandbox/exec", map[string]any{"projectPath": project, "command": serve, "background": true}, time.Minute))
		exposed := result(t, s.call("sandbox/ports/expose", map[string]any{"projectPath": project, "port": 8000}, time.Minute))
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
