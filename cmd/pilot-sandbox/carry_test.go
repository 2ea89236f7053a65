package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// carrying is a running `pilot-sandbox expose|forward|browser`.
type carrying struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr bytes.Buffer
	line   string // the first line of stdout: what it carries
}

// carry runs the command in project and waits for its first line.
func carry(t *testing.T, project, state string, args ...string) *carrying {
	t.Helper()
	c := &carrying{t: t, cmd: exec.Command(binary, args...)}
	c.cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
	c.cmd.Dir = project
	c.cmd.Stderr = &c.stderr
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cmd.Process.Kill(); c.cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- strings.TrimSpace(line)
		io.Copy(io.Discard, r)
	}()
	select {
	case c.line = <-lines:
	case <-time.After(3 * time.Minute):
		t.Fatalf("%v printed nothing: %s", args, c.stderr.String())
	}
	if c.line == "" {
		t.Fatalf("%v printed nothing: %s", args, c.stderr.String())
	}
	return c
}

// interrupt is the user's Ctrl-C: the command must end, with 0.
func (c *carrying) interrupt() {
	c.t.Helper()
	c.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			c.t.Errorf("%v after Ctrl-C: %v: %s", c.cmd.Args[1:], err, c.stderr.String())
		}
	case <-time.After(time.Minute):
		c.t.Errorf("%v did not end on Ctrl-C", c.cmd.Args[1:])
	}
	if !strings.Contains(c.stderr.String(), "Ctrl-C") {
		c.t.Errorf("%v did not say it carries until Ctrl-C: %s", c.cmd.Args[1:], c.stderr.String())
	}
}

// TestExposeAndForwardFromTheCommandLine runs `expose` and `forward` as a
// user would, on a real sandbox: each prints what it carries, which
// answers while it runs and ends with its Ctrl-C.
func TestExposeAndForwardFromTheCommandLine(t *testing.T) {
	docker := dockertest.Engine(t)
	project := dockertest.Project(t, docker)
	state := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
		cmd.Dir = project
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
		return string(out)
	}
	run("start")
	run("exec", "--", "sh", "-c", "cd /tmp && echo served > page && setsid python3 -m http.server 8765 >/dev/null 2>&1 &")

	t.Run("expose", func(t *testing.T) {
		c := carry(t, project, state, "expose", "8765")
		if !strings.HasPrefix(c.line, "http://127.0.0.1:") {
			t.Fatalf("expose printed %q; want its address", c.line)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			code, body := httpGet(t, c.line+"/page")
			if code == http.StatusOK && body == "served\n" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET the exposed port: %d %q", code, body)
			}
			time.Sleep(200 * time.Millisecond)
		}
		c.interrupt()
		if code, body := httpGet(t, c.line+"/page"); code != 0 {
			t.Errorf("after Ctrl-C the port still answers: %d %q", code, body)
		}
	})
	t.Run("forward", func(t *testing.T) {
		host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "host page") }))
		defer host.Close()
		hostPort := host.Listener.Addr().(*net.TCPAddr).Port
		c := carry(t, project, state, "forward", "8766:"+strconv.Itoa(hostPort))
		if want := "localhost:8766 in the sandbox reaches 127.0.0.1:" + strconv.Itoa(hostPort) + " here"; c.line != want {
			t.Errorf("forward printed %q; want %q", c.line, want)
		}
		fetch := []string{"exec", "--", "python3", "-c", `import urllib.request; print(urllib.request.urlopen("http://localhost:8766/", timeout=10).read().decode(), end="")`}
		if out := run(fetch...); out != "host page" {
			t.Errorf("through the forward: %q", out)
		}
		c.interrupt()
		cmd := exec.Command(binary, fetch...)
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
		cmd.Dir = project
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("after Ctrl-C the forward still carries: %q", out)
		}
	})
	t.Run("bad ports", func(t *testing.T) {
		for _, args := range [][]string{{"expose", "0"}, {"expose", "80:81"}, {"forward", "x"}, {"forward"}, {"forward", "1:70000"}} {
			cmd := exec.Command(binary, args...)
			cmd.Dir = project
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Errorf("%v: exit 0: %s", args, out)
			}
		}
	})
}

// TestBrowserFromTheCommandLine: `browser` prints the DevTools address of
// the sandbox's Chromium, whose /json/version answers while it runs.
func TestBrowserFromTheCommandLine(t *testing.T) {
	docker := dockertest.Engine(t)
	project := dockertest.Project(t, docker)
	os.MkdirAll(filepath.Join(project, projectfs.Dir), 0o755)
	if err := os.WriteFile(projectfs.SettingsFile(project), []byte(`{"sandbox": {"image": "browser"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	start := exec.Command(binary, "start")
	start.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
	start.Dir = project
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("start: %v: %s", err, out)
	}
	c := carry(t, project, state, "browser")
	if !strings.HasPrefix(c.line, "ws://127.0.0.1:") || !strings.Contains(c.line, "/devtools/browser/") {
		t.Fatalf("browser printed %q; want a DevTools ws:// address", c.line)
	}
	// What Playwright's connectOverCDP reads first, given the http:// address.
	base := "http://" + strings.TrimPrefix(c.line[:strings.Index(c.line, "/devtools/")], "ws://")
	code, body := httpGet(t, base+"/json/version")
	if code != http.StatusOK || !strings.Contains(body, `"webSocketDebuggerUrl":"`+c.line+`"`) {
		t.Errorf("/json/version: %d %q; want it to name %s", code, body, c.line)
	}
	c.interrupt()
}
