package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/rpc"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// The soak test's size and its bounds on growth. The growth is measured
// from after a warm-up (every sandbox started, its desktop agent running)
// to after the calls, once the Go heap was collected: steady-state costs
// (an agent's exec stream per sandbox, pooled connections) are in both.
const (
	soakProjects = 10
	soakCalls    = 2000
	// Goroutines and open files may differ by a few pooled connections to
	// the engine; a leak of one per call would be thousands.
	maxGoroutineGrowth = 10
	maxFileGrowth      = 10
	// Resident memory may grow by what the runtime keeps of the heap's
	// high-water mark (screenshots in flight); a leak of a screenshot per
	// call would be gigabytes.
	maxRSSGrowth = 64 << 20
)

// TestSoak runs 10 sandboxes at once and makes 2,000 agent tool calls
// spread over them, through the JSON-RPC server on an in-memory pipe as the
// desktop app would (the sidecar is this process: manager, tools, server).
// No call may fail, and the sidecar's goroutines, open files and memory
// must not grow beyond the bounds above. It reports calls per second,
// latency percentiles, the sidecar's memory and each sandbox's.
//
// It runs in the normal suite (about a minute on a 2-core machine; CI
// allows 90), since a leak is a regression like any other; -short skips it.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak test runs 10 sandboxes for about a minute; run without -short")
	}
	m, docker := dockertest.Manager(t, func(c *service.Config) {
		// Logs are made as the sidecar makes them, and thrown away.
		c.Logger = zerolog.New(io.Discard).Level(zerolog.DebugLevel)
	})
	api := dockertest.NewAPI(t)
	client := serveOnPipe(t, m)
	projects := make([]string, soakProjects)
	for i := range projects {
		projects[i] = dockertest.Project(t, docker)
		os.MkdirAll(filepath.Join(projects[i], ".pilot"), 0o755)
		os.WriteFile(filepath.Join(projects[i], ".pilot", "settings.json"), []byte(`{"dockerToolsEnabled": true}`), 0o644)
	}

	started := time.Now()
	ids := make([]string, soakProjects)
	parallel(soakProjects, func(i int) {
		var st service.State
		if err := client.call("sandbox/start", map[string]any{"projectPath": projects[i]}, &st); err != nil {
			t.Errorf("start %d: %v", i, err)
		}
		ids[i] = st.ContainerID
	})
	if t.Failed() {
		return
	}
	t.Logf("%d sandboxes started at once in %s", soakProjects, time.Since(started).Round(time.Millisecond))
	parallel(soakProjects, func(i int) { // warm-up: each desktop agent starts
		for j := range len(soakMix) {
			client.tool(t, projects[i], j)
		}
	})
	before := measure()

	latencies := make([][]time.Duration, soakProjects)
	byTool := make([]map[string][]time.Duration, soakProjects)
	started = time.Now()
	parallel(soakProjects, func(i int) {
		byTool[i] = map[string][]time.Duration{}
		for j := range soakCalls / soakProjects {
			took := client.tool(t, projects[i], i+j)
			latencies[i] = append(latencies[i], took)
			name := soakMix[(i+j)%len(soakMix)].name
			byTool[i][name] = append(byTool[i][name], took)
		}
	})
	elapsed := time.Since(started)
	after := settle(before)

	all := slices.Concat(latencies...)
	slices.Sort(all)
	t.Logf("%d tool calls over %d sandboxes in %s: %.0f calls/s, latency p50 %s, p99 %s, max %s",
		len(all), soakProjects, elapsed.Round(time.Millisecond), float64(len(all))/elapsed.Seconds(),
		percentile(all, 50), percentile(all, 99), all[len(all)-1])
	for _, tc := range soakMix {
		var one []time.Duration
		for i := range byTool {
			one = append(one, byTool[i][tc.name]...)
		}
		slices.Sort(one)
		t.Logf("  %-22s %4d calls, p50 %s, p99 %s", tc.name, len(one), percentile(one, 50), percentile(one, 99))
	}
	t.Logf("sidecar before -> after: %d -> %d goroutines, %d -> %d open files, RSS %s -> %s, Go heap in use %s -> %s",
		before.goroutines, after.goroutines, before.files, after.files, mib(before.rss), mib(after.rss), mib(before.heap), mib(after.heap))
	var mem []int64
	for _, id := range ids {
		mem = append(mem, api.Stats(id).MemoryBytes)
	}
	slices.Sort(mem)
	t.Logf("memory per sandbox (docker stats): min %s, median %s, max %s", mib(mem[0]), mib(mem[len(mem)/2]), mib(mem[len(mem)-1]))

	if len(all) != soakCalls || client.failed.Load() != 0 {
		t.Errorf("%d calls made, %d failed; want %d, none failed", len(all), client.failed.Load(), soakCalls)
	}
	if g := after.goroutines - before.goroutines; g > maxGoroutineGrowth {
		t.Errorf("goroutines grew by %d (bound %d)", g, maxGoroutineGrowth)
	}
	if f := after.files - before.files; f > maxFileGrowth {
		t.Errorf("open files grew by %d (bound %d)", f, maxFileGrowth)
	}
	if r := after.rss - before.rss; r > maxRSSGrowth {
		t.Errorf("resident memory grew by %s (bound %s)", mib(r), mib(maxRSSGrowth))
	}
}

// soakMix is what an agent does, round and round: look, point, click,
// type, use the clipboard, run a command. Keys and clicks land on the bare
// desktop (no window), where they change nothing.
var soakMix = []struct{ name, args string }{
	{"sandbox_screenshot", `{}`},
	{"sandbox_hover", `{"x": 400, "y": 300}`},
	{"sandbox_click", `{"x": 401, "y": 301}`},
	{"sandbox_key", `{"keys": "Shift_L"}`},
	{"sandbox_type", `{"text": "soak"}`},
	{"sandbox_scroll", `{"x": 400, "y": 300, "direction": "down", "amount": 1}`},
	{"sandbox_clipboard_set", `{"text": "soak ✓"}`},
	{"sandbox_clipboard_get", `{}`},
	{"sandbox_drag", `{"startX": 300, "startY": 300, "endX": 320, "endY": 310}`},
	{"sandbox_exec", `{"command": "echo ok"}`},
}

// usage is what the sidecar process holds.
type usage struct {
	goroutines, files int
	rss, heap         int64
}

func measure() usage {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	entries, _ := os.ReadDir("/proc/self/fd")
	return usage{goroutines: runtime.NumGoroutine(), files: len(entries), rss: rss(), heap: int64(ms.HeapInuse)}
}

// settle measures once the goroutines of the last calls (replies being
// written, execs being torn down) have ended, polling for up to 10 s.
func settle(before usage) usage {
	deadline := time.Now().Add(10 * time.Second)
	for {
		u := measure()
		if u.goroutines-before.goroutines <= maxGoroutineGrowth || time.Now().After(deadline) {
			return u
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rss is the process's resident memory (Linux), or 0 where /proc has none.
func rss() int64 {
	data, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func percentile(sorted []time.Duration, p int) time.Duration {
	return sorted[(len(sorted)-1)*p/100].Round(100 * time.Microsecond)
}

func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { f(i) })
	}
	wg.Wait()
}

// pipeClient is a JSON-RPC client on an in-memory pipe to the server, with
// any number of calls in flight (matched by id), as the desktop app has.
type pipeClient struct {
	conn net.Conn

	wmu sync.Mutex // serializes writes of whole frames

	mu      sync.Mutex // guards next and waiting
	next    int
	waiting map[int]chan json.RawMessage

	failed atomic.Int64 // calls that failed
}

func serveOnPipe(t *testing.T, m *service.Manager) *pipeClient {
	server, conn := net.Pipe()
	relays := ports.NewCarrier(m, dockertest.Engine(t), ports.Options{Log: zerolog.Nop()})
	t.Cleanup(relays.Close)
	s := rpc.NewServer(m, relays, tools.New(m), rpc.Info{Name: "soak", Version: "0"}, zerolog.Nop())
	done := make(chan struct{})
	go func() {
		s.Serve(context.Background(), rpc.NewStream(rpc.FramingNDJSON, server, server, server), rpc.ConnOptions{})
		close(done)
	}()
	c := &pipeClient{conn: conn, waiting: map[int]chan json.RawMessage{}}
	go c.read()
	t.Cleanup(func() { conn.Close(); <-done })
	return c
}

// read hands each response to its caller until the connection closes;
// notifications are dropped.
func (c *pipeClient) read() {
	dec := json.NewDecoder(c.conn)
	for {
		var msg struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := dec.Decode(&msg); err != nil {
			return
		}
		if msg.ID == nil {
			continue
		}
		c.mu.Lock()
		ch := c.waiting[*msg.ID]
		delete(c.waiting, *msg.ID)
		c.mu.Unlock()
		if msg.Error != nil {
			ch <- append(json.RawMessage(`{"error":`), append(msg.Error, '}')...)
		} else {
			ch <- msg.Result
		}
	}
}

// call makes a request and decodes its result into out.
func (c *pipeClient) call(method string, params any, out any) error {
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan json.RawMessage, 1)
	c.waiting[id] = ch
	c.mu.Unlock()
	frame, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	c.wmu.Lock()
	_, err := c.conn.Write(append(frame, '\n'))
	c.wmu.Unlock()
	if err != nil {
		return err
	}
	select {
	case res := <-ch:
		if strings.HasPrefix(string(res), `{"error":`) {
			return fmt.Errorf("%s", res)
		}
		return json.Unmarshal(res, out)
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("%s: no answer within 2 minutes", method)
	}
}

// tool makes the i-th call of the mix on the project, failing the test if
// it fails in any way, and returns how long it took.
func (c *pipeClient) tool(t *testing.T, project string, i int) time.Duration {
	tc := soakMix[i%len(soakMix)]
	started := time.Now()
	var res tools.Result
	err := c.call("tools/call", map[string]any{"projectPath": project, "name": tc.name, "arguments": json.RawMessage(tc.args)}, &res)
	took := time.Since(started)
	if err != nil || res.IsError {
		if n := c.failed.Add(1); n <= 5 {
			t.Errorf("%s on %s: %v %+v", tc.name, filepath.Base(project), err, res)
		} else if n == 6 {
			t.Error("more calls failed; see the count")
		}
	}
	return took
}
