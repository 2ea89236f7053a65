package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/rpc"
)

// TestManyKillsAtOnceAreAnsweredBusy is the audit of issue 28's: 150
// sandbox/kill requests sent at once on one connection each ran engine
// calls at once, and the engine gave way (72.7 s, 94 timeouts). A
// client's calls on one sandbox beyond the limit are answered busy at
// once (the others kill the process, or find it gone); none times out.
func TestManyKillsAtOnceAreAnsweredBusy(t *testing.T) {
	docker := dockertest.Engine(t)
	project := dockertest.Project(t, docker)
	s := startSidecar(t, "ndjson")
	result(t, s.call("initialize", map[string]any{}, 20*time.Second))
	result(t, s.call("sandbox/start", map[string]any{"projectPath": project}, 5*time.Minute))
	started := result(t, s.call("sandbox/exec", map[string]any{"projectPath": project, "command": "sleep 600", "background": true}, time.Minute))
	const n = 150
	began := time.Now()
	for i := range n {
		s.write(map[string]any{"id": float64(10000 + i), "method": "sandbox/kill",
			"params": map[string]any{"projectPath": project, "pid": started["pid"]}})
	}
	kinds := map[string]int{}
	deadline := time.After(5 * time.Minute) // a bound, not a speed
	for answered := 0; answered < n; {
		select {
		case msg := <-s.msgs:
			id, _ := msg["id"].(float64)
			if id < 10000 || msg["method"] != nil {
				continue
			}
			answered++
			kind := "result"
			if e, ok := msg["error"].(map[string]any); ok {
				kind = fmt.Sprint(e["data"].(map[string]any)["kind"])
			}
			kinds[kind]++
		case <-deadline:
			t.Fatalf("not every kill was answered within 5 minutes: %v", kinds)
		}
	}
	t.Logf("%d kills answered in %s: %v", n, time.Since(began).Round(time.Millisecond), kinds)
	// A kill that starts after another ended the process finds no such
	// process: invalid_params, as for any pid not running.
	gone := kinds["invalid_params"]
	if kinds["timeout"] > 0 || kinds["busy"] < n-rpc.MaxSandboxCalls || kinds["result"] < 1 ||
		kinds["busy"]+kinds["result"]+gone != n {
		t.Errorf("answers %v; want all but at most %d answered busy, the others killing or finding the process gone, no timeout", kinds, rpc.MaxSandboxCalls)
	}
	ps := result(t, s.call("sandbox/exec", map[string]any{"projectPath": project, "command": "ps -e --no-headers | wc -l"}, time.Minute))
	t.Logf("processes in the sandbox after: %v", strings.TrimSpace(fmt.Sprint(ps["stdout"])))
}
