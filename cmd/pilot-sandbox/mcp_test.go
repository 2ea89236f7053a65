package main

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// mcpClient connects the MCP Go SDK's own client to the built binary's
// `pilot-sandbox mcp`, over its stdin and stdout.
func mcpClient(t *testing.T, args ...string) (*mcp.ClientSession, *bytes.Buffer) {
	t.Helper()
	return mcpClientWithState(t, t.TempDir(), args...)
}

// mcpClientWithState is mcpClient with the user's state directory given.
func mcpClientWithState(t *testing.T, state string, args ...string) (*mcp.ClientSession, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("pilot-sandbox mcp stderr:\n%s", stderr.String())
		}
	})
	return cs, &stderr
}

func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	return res, strings.Join(text, "\n")
}

// The Go SDK's client drives a real sandbox through the built binary.
func TestMCPServesTheSandbox(t *testing.T) {
	docker := dockertest.Engine(t)
	project := dockertest.Project(t, docker)
	cs, _ := mcpClient(t, "--project", project, "--enable-tools")

	if v, want := cs.InitializeResult().ProtocolVersion, mcp.SupportedProtocolVersions()[0]; v != want {
		t.Errorf("negotiated %s, want the SDK's newest, %s", v, want)
	}
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(list.Tools) != 16 {
		t.Fatalf("tools/list: %d tools, %v", len(list.Tools), err)
	}

	startSandbox(t, cs)

	res, text := mcpCall(t, cs, "sandbox_screenshot", map[string]any{})
	image, ok := res.Content[0].(*mcp.ImageContent)
	if res.IsError || !ok || image.MIMEType != "image/png" {
		t.Fatalf("screenshot: %+v %q", res.Content, text)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(image.Data))
	if err != nil || cfg.Width != 1280 || cfg.Height != 800 {
		t.Errorf("screenshot is %dx%d (%v), want a 1280x800 PNG", cfg.Width, cfg.Height, err)
	}

	res, text = mcpCall(t, cs, "sandbox_click", map[string]any{"x": 1280, "y": 10})
	if !res.IsError || text != `Invalid arguments: argument "x" is 1280, off the screen: it must be from 0 to 1279 (the screenshot is 1280x800 pixels).` {
		t.Errorf("click off the screen: %q (isError %v)", text, res.IsError)
	}
	res, text = mcpCall(t, cs, "sandbox_exec", map[string]any{"command": "echo $DISPLAY", "timeoutSeconds": 0})
	if !res.IsError || !strings.Contains(text, `"timeoutSeconds" must be from 1 to 600; got 0`) {
		t.Errorf("exec with timeoutSeconds 0: %q (isError %v)", text, res.IsError)
	}
	if _, text := mcpCall(t, cs, "sandbox_exec", map[string]any{"command": "echo $DISPLAY"}); text != "Exit code 0.\n\nstdout:\n:99\n" {
		t.Errorf("exec: %q", text)
	}
}

// startSandbox starts the project's sandbox through sandbox_start, and
// waits with sandbox_wait while it goes on in the background (a first
// start that builds the image answers before it is done).
func startSandbox(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	_, text := mcpCall(t, cs, "sandbox_start", map[string]any{})
	for deadline := time.Now().Add(15 * time.Minute); strings.Contains(text, "is still running"); {
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox did not start: %q", text)
		}
		_, text = mcpCall(t, cs, "sandbox_wait", map[string]any{"seconds": 30})
	}
	if !strings.Contains(text, "The sandbox is running: a 1280x800 Linux desktop") {
		t.Fatalf("start: %q", text)
	}
}

// Without Docker the server still serves, and the tools say what to do.
func TestMCPWithoutDockerSaysWhatToDo(t *testing.T) {
	project := t.TempDir()
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	cs, _ := mcpClient(t, "--project", project, "--enable-tools")
	res, text := mcpCall(t, cs, "sandbox_start", map[string]any{})
	if !res.IsError || !strings.Contains(text, "Docker is not available") {
		t.Errorf("start without Docker: %q (isError %v)", text, res.IsError)
	}
}

// A project that is not there is refused at once, on stderr.
func TestMCPRefusesABadProject(t *testing.T) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(binary, "mcp", "--project", "/nonexistent/project")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || stdout.Len() > 0 ||
		!strings.Contains(stderr.String(), `project path "/nonexistent/project": does not exist`) {
		t.Errorf("%v: stdout %q, stderr %q", err, stdout.String(), stderr.String())
	}
}

// A port the user forwarded for the project (kept in their state, as the
// app's sidecar keeps it) reaches their dev server from a sandbox the MCP
// server started, with no other sidecar running: before, only serve and
// ui carried forwards.
func TestMCPCarriesTheProjectsForwards(t *testing.T) {
	docker := dockertest.Engine(t)
	project := dockertest.Project(t, docker)
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "the host's dev server") }))
	defer host.Close()
	hostPort := host.Listener.Addr().(*net.TCPAddr).Port
	state := t.TempDir()
	err := projectfs.NewForwards(filepath.Join(state, "pilot-sandbox")).Change(project, func([]projectfs.Forward) ([]projectfs.Forward, error) {
		return []projectfs.Forward{{Port: 8766, HostPort: hostPort}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := mcpClientWithState(t, state, "--project", project, "--enable-tools")
	startSandbox(t, cs)
	fetch := `python3 -c 'import urllib.request; print(urllib.request.urlopen("http://localhost:8766/", timeout=10).read().decode(), end="")'`
	var text string
	for deadline := time.Now().Add(30 * time.Second); ; {
		// The forward is applied as the sandbox is seen running, beside
		// the start's answer.
		_, text = mcpCall(t, cs, "sandbox_exec", map[string]any{"command": fetch})
		if strings.Contains(text, "the host's dev server") || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(text, "the host's dev server") {
		t.Errorf("through the forward: %q", text)
	}
}
