package tools_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/rpc"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// bench is a fresh sandbox (no windows, so keys go to the root window and
// change nothing) served over JSON-RPC on an in-memory pipe, as the desktop
// app would reach it, next to the engine for plain docker execs.
type bench struct {
	b       *testing.B
	docker  service.Docker
	id      string
	project string
	conn    net.Conn
	r       *bufio.Reader
	next    int
}

func newBench(b *testing.B) *bench {
	b.Helper()
	m, docker := dockertest.Manager(b, func(c *service.Config) { c.Logger = zerolog.Nop() })
	dir := dockertest.Project(b, docker)
	os.MkdirAll(filepath.Join(dir, ".pilot"), 0o755)
	os.WriteFile(filepath.Join(dir, ".pilot", "settings.json"), []byte(`{"dockerToolsEnabled": true}`), 0o644)
	st, err := m.Start(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	server, client := net.Pipe()
	s := rpc.NewServer(m, tools.New(m), rpc.Info{Name: "bench", Version: "0"}, zerolog.Nop())
	done := make(chan struct{})
	go func() {
		s.Serve(context.Background(), rpc.NewStream(rpc.FramingNDJSON, server, server, server), rpc.ConnOptions{})
		close(done)
	}()
	b.Cleanup(func() { client.Close(); <-done })
	bn := &bench{b: b, docker: docker, id: st.ContainerID, project: dir, conn: client, r: bufio.NewReader(client)}
	bn.tool("sandbox_hover", `{"x": 0, "y": 0}`) // start the desktop agent
	return bn
}

// tool calls an agent tool through tools/call and fails on any error.
func (bn *bench) tool(name, args string) {
	bn.next++
	req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"projectPath":%q,"name":%q,"arguments":%s}}`+"\n",
		bn.next, bn.project, name, args)
	if _, err := bn.conn.Write([]byte(req)); err != nil {
		bn.b.Fatal(err)
	}
	for {
		line, err := bn.r.ReadBytes('\n')
		if err != nil {
			bn.b.Fatal(err)
		}
		var resp struct {
			ID     int             `json:"id"`
			Result *tools.Result   `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		json.Unmarshal(line, &resp)
		if resp.ID != bn.next {
			continue // a notification
		}
		if resp.Result == nil || resp.Result.IsError {
			bn.b.Fatalf("%s: %s", name, line)
		}
		return
	}
}

// exec runs a command with a plain docker exec (create, start, inspect), the
// way the seed plan drives the desktop.
func (bn *bench) exec(cmd ...string) {
	res, err := bn.docker.Exec(context.Background(), bn.id, service.ExecSpec{
		Cmd: cmd, User: "sandbox", Env: []string{"DISPLAY=:99"}, Timeout: time.Minute,
	})
	if err != nil || res.ExitCode != 0 {
		bn.b.Fatalf("%v: %v %d %s", cmd, err, res.ExitCode, res.Stderr)
	}
}

func BenchmarkBareDockerExec(b *testing.B) {
	bn := newBench(b)
	for b.Loop() {
		bn.exec("true")
	}
}

func BenchmarkClick(b *testing.B) {
	bn := newBench(b)
	b.Run("tools_call", func(b *testing.B) {
		bn.b = b
		i := 0
		for b.Loop() {
			i++
			bn.tool("sandbox_click", fmt.Sprintf(`{"x": %d, "y": 300}`, 600+i%2))
		}
	})
	b.Run("docker_exec_xdotool", func(b *testing.B) {
		bn.b = b
		i := 0
		for b.Loop() {
			// --sync to where the pointer already is hangs for ~15 s: move
			// somewhere else each time, as the seed's plan would need to.
			i++
			bn.exec("xdotool", "mousemove", "--sync", fmt.Sprint(600+i%2), "300", "click", "1")
		}
	})
}

func BenchmarkKey(b *testing.B) {
	bn := newBench(b)
	b.Run("tools_call", func(b *testing.B) {
		bn.b = b
		for b.Loop() {
			bn.tool("sandbox_key", `{"keys": "Escape"}`)
		}
	})
	b.Run("docker_exec_xdotool", func(b *testing.B) {
		bn.b = b
		for b.Loop() {
			bn.exec("xdotool", "key", "Escape")
		}
	})
}

func BenchmarkScreenshot(b *testing.B) {
	bn := newBench(b)
	b.Run("tools_call", func(b *testing.B) {
		bn.b = b
		for b.Loop() {
			bn.tool("sandbox_screenshot", `{}`)
		}
	})
	b.Run("docker_exec_scrot", func(b *testing.B) {
		bn.b = b
		for b.Loop() {
			bn.exec("scrot", "--overwrite", "-")
		}
	})
}

func BenchmarkType1000(b *testing.B) {
	bn := newBench(b)
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 23)[:1000]
	b.Run("tools_call", func(b *testing.B) {
		bn.b = b
		args, _ := json.Marshal(map[string]string{"text": text})
		for b.Loop() {
			bn.tool("sandbox_type", string(args))
		}
	})
	b.Run("docker_exec_xdotool", func(b *testing.B) {
		bn.b = b
		for b.Loop() {
			bn.exec("xdotool", "type", "--", text)
		}
	})
}
