package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// panelServer is a running `pilot-sandbox ui`.
type panelServer struct {
	cmd     *exec.Cmd
	address string // the first line of stdout
	stdout  *bufio.Reader
	stderr  *syncBuffer
}

// syncBuffer is a bytes.Buffer that the process's stderr copier and the test
// can use at once.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startUI runs `pilot-sandbox ui` with args and no Docker engine (the
// server itself does not need one), and reads its first line.
func startUI(t *testing.T, env []string, args ...string) *panelServer {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"ui"}, args...)...)
	cmd.Env = append(os.Environ(), append([]string{"XDG_STATE_HOME=" + t.TempDir(), "DOCKER_HOST=unix:///nonexistent/docker.sock"}, env...)...)
	s := &panelServer{cmd: cmd, stderr: &syncBuffer{}}
	cmd.Stderr = s.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s.stdout = bufio.NewReader(out)
	line, err := s.stdout.ReadString('\n')
	if err != nil {
		t.Fatalf("no address on stdout: %v\nstderr: %s", err, s.stderr)
	}
	s.address = strings.TrimSuffix(line, "\n")
	return s
}

var panelAddress = regexp.MustCompile(`^http://127\.0\.0\.1:(\d+)/#token=([0-9a-f]{32})$`)

func TestUIServesThePanelAndItsWebSocket(t *testing.T) {
	project := t.TempDir()
	s := startUI(t, nil, "--no-open", "--project", project)
	m := panelAddress.FindStringSubmatch(s.address)
	if m == nil {
		t.Fatalf("first line %q is not http://127.0.0.1:PORT/#token=T", s.address)
	}
	origin, token := "http://127.0.0.1:"+m[1], m[2]

	resp, err := http.Get(origin + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), `project="`+project+`"`) {
		t.Errorf("GET /: %s\n%s", resp.Status, page)
	}

	rpcURL := "ws://127.0.0.1:" + m[1] + "/rpc?token="
	for _, tc := range []struct {
		name, token, origin string
		status              int
	}{
		{"no token", "", origin, http.StatusUnauthorized},
		{"a wrong token", strings.Repeat("0", 32), origin, http.StatusUnauthorized},
		{"another origin", token, "http://evil.example", http.StatusForbidden},
		{"another port of loopback", token, "http://127.0.0.1:1", http.StatusForbidden},
		{"the panel's own origin", token, origin, http.StatusSwitchingProtocols},
	} {
		conn, resp, err := websocket.DefaultDialer.Dial(rpcURL+tc.token, http.Header{"Origin": {tc.origin}})
		if resp == nil || resp.StatusCode != tc.status {
			t.Errorf("%s: %v %v, want %d", tc.name, resp, err, tc.status)
		}
		if conn == nil {
			continue
		}
		conn.WriteJSON(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "docker/status", "params": map[string]any{}})
		var reply struct{ Result struct{ Available *bool } }
		if err := conn.ReadJSON(&reply); err != nil || reply.Result.Available == nil || *reply.Result.Available {
			t.Errorf("docker/status over the panel's WebSocket: %+v %v", reply, err)
		}
		conn.Close()
	}

	// SIGTERM ends it cleanly, and stdout held the address and nothing else.
	s.cmd.Process.Signal(syscall.SIGTERM)
	rest, _ := io.ReadAll(s.stdout)
	if err := s.cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, s.stderr)
	}
	if len(rest) != 0 {
		t.Errorf("stdout after the address: %q", rest)
	}
}

func TestUITokensDifferPerProcess(t *testing.T) {
	project := t.TempDir()
	a := startUI(t, nil, "--no-open", "--project", project)
	b := startUI(t, nil, "--no-open", "--project", project)
	ta, tb := panelAddress.FindStringSubmatch(a.address), panelAddress.FindStringSubmatch(b.address)
	if ta == nil || tb == nil || ta[2] == tb[2] || ta[1] == tb[1] {
		t.Errorf("two runs: %q and %q", a.address, b.address)
	}
}

func TestUIRefusesBadInput(t *testing.T) {
	taken := startUI(t, nil, "--no-open", "--project", t.TempDir())
	takenPort := panelAddress.FindStringSubmatch(taken.address)[1]
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"all interfaces", []string{"--listen", "0.0.0.0:0"}, 1, "127.0.0.1 only"},
		{"another host", []string{"--listen", "192.0.2.1:8080"}, 1, "127.0.0.1 only"},
		{"not an address", []string{"--listen", "nonsense"}, 1, "want 127.0.0.1:PORT"},
		{"not a port", []string{"--listen", "127.0.0.1:http"}, 1, "not a port number"},
		{"a port in use", []string{"--listen", "127.0.0.1:" + takenPort}, 1, "address already in use"},
		{"no such project", []string{"--project", "/nonexistent/project"}, 1, "/nonexistent/project"},
		{"an argument", []string{"extra"}, 2, `unexpected argument "extra"`},
	} {
		cmd := exec.Command(binary, append([]string{"ui", "--no-open"}, tc.args...)...)
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		done := make(chan struct{})
		go func() { cmd.Run(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("%s: still running", tc.name)
			continue
		}
		if code := cmd.ProcessState.ExitCode(); code != tc.code || !strings.Contains(stderr.String(), tc.stderr) || stdout.Len() != 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.name, code, stdout.String(), stderr.String(), tc.code, tc.stderr)
		}
	}
}

// The browser gets a private file that redirects to the address, never the
// address itself: a command line is visible to every user of the machine.
func TestUIOpensTheBrowserWithoutTheTokenOnACommandLine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the opener is xdg-open on Linux only")
	}
	bin := t.TempDir()
	record := filepath.Join(t.TempDir(), "opened")
	script := "#!/bin/sh\necho \"$@\" > " + record + ".args\ncat \"$1\" > " + record + ".tmp\nstat -c %a \"$1\" > " + record + ".mode\nmv " + record + ".tmp " + record + "\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s := startUI(t, []string{"PATH=" + bin + ":/usr/bin:/bin"}, "--project", t.TempDir())
	var page []byte
	for deadline := time.Now().Add(10 * time.Second); len(page) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		page, _ = os.ReadFile(record)
	}
	args, _ := os.ReadFile(record + ".args")
	mode, _ := os.ReadFile(record + ".mode")
	token := panelAddress.FindStringSubmatch(s.address)[2]
	if !bytes.Contains(page, []byte(`url=`+s.address+`"`)) || strings.Contains(string(args), token) || strings.TrimSpace(string(mode)) != "600" {
		t.Errorf("xdg-open got %q (mode %s), a page with:\n%s", args, mode, page)
	}

	// Without an opener it says so, and serves all the same.
	s = startUI(t, []string{"PATH=" + t.TempDir()}, "--project", t.TempDir())
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(s.stderr.String(), "could not open a browser") && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
	}
	if !strings.Contains(s.stderr.String(), "open the address printed above yourself") {
		t.Errorf("stderr without xdg-open: %s", s.stderr)
	}
	if resp, err := http.Get(strings.Split(s.address, "#")[0]); err != nil || resp.StatusCode != 200 {
		t.Errorf("the panel without a browser: %v %v", resp, err)
	}
}
