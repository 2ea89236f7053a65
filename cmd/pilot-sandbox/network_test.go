package main

import (
	"context"
	"encoding/json"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/netpolicy"
	"github.com/pilot-sandbox/pilot-sandbox/permission"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// fakePolicySource is a user's config and a project's settings in memory.
type fakePolicySource struct {
	mu   sync.Mutex // guards user
	user netpolicy.Config
}

func (f *fakePolicySource) UserNetwork() (netpolicy.Config, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.user, nil
}

func (f *fakePolicySource) RepositoryNetwork(string) (netpolicy.Repository, bool, error) {
	return netpolicy.Repository{}, true, nil
}

type tableResolver map[string][]netip.Addr

func (r tableResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return r[host], nil
}

func testNetwork(t *testing.T, src policySource) *network {
	return buildNetwork(src, t.TempDir(), tableResolver{"example.org": {netip.MustParseAddr("93.184.215.14")}},
		func() []netip.Addr { return nil })
}

// TestNetworkAskAnswerKeep: the Judge's question reaches a listener as the
// protocol shapes it; allow_always is then a kept rule the Judge decides
// by, without asking.
func TestNetworkAskAnswerKeep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := testNetwork(t, &fakePolicySource{})
		asked := make(chan permission.Question, 1)
		n.broker.Listen("/p", func(e permission.Event) {
			if e.Asked != nil {
				asked <- *e.Asked
			}
		})
		req := netpolicy.Request{Project: "/p", Names: []string{"example.org"}, Port: 443, Protocol: "tcp",
			Process: &netpolicy.Process{PID: 7, Command: "curl https://example.org"}}
		got := make(chan netpolicy.Decision, 1)
		go func() { got <- n.judge.Judge(context.Background(), req) }()
		q := <-asked
		wire, _ := json.Marshal(q)
		want := `{"id":"` + q.ID + `","projectPath":"/p","kind":"network","rule":"example.org:443","summary":"connect to example.org:443 (tcp) from ` +
			"`curl https://example.org`" + `","detail":{"host":"example.org","port":443,"protocol":"tcp","process":{"pid":7,"command":"curl https://example.org"}},"expiresAt":` +
			jsonInt(time.Now().Add(netpolicy.DefaultAskTimeout).UnixMilli()) + `}`
		if string(wire) != want {
			t.Errorf("question:\n%s\nwant\n%s", wire, want)
		}
		if err := n.broker.Answer(q.ID, permission.Answer{Decision: permission.AllowAlways}); err != nil {
			t.Fatal(err)
		}
		if d := <-got; !d.Allow || d.By != netpolicy.ByUser || len(d.Dial) != 1 {
			t.Errorf("decision = %+v", d)
		}
		if d := n.judge.Judge(context.Background(), req); !d.Allow || d.By != netpolicy.ByUser || d.Rule != "example.org:443" {
			t.Errorf("the next connection = %+v, want it allowed by the kept decision", d)
		}
	})
}

// TestNetworkSettledByTheConfig: a connection waiting on a question goes
// through once the user allows its host in config.json (pilot-sandbox net
// allow), by that rule.
func TestNetworkSettledByTheConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakePolicySource{}
		n := testNetwork(t, src)
		n.broker.Listen("/p", func(permission.Event) {})
		got := make(chan netpolicy.Decision, 1)
		go func() {
			got <- n.judge.Judge(context.Background(), netpolicy.Request{Project: "/p", Names: []string{"example.org"}, Port: 443, Protocol: "tcp"})
		}()
		time.Sleep(2 * permission.SettleEvery)
		rule, _ := netpolicy.ParseRule("example.org")
		src.mu.Lock()
		src.user.Allow = []netpolicy.Rule{rule}
		src.mu.Unlock()
		time.Sleep(permission.SettleEvery)
		if d := <-got; !d.Allow || d.By != netpolicy.ByRule || d.Rule != "example.org" {
			t.Errorf("decision = %+v", d)
		}
	})
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestNetworkLog: a recorded connection reaches a watcher at once and the
// log at once (before its write), is written within logFlushEvery, and
// what a process writes, the next one reads; a flood keeps at most
// maxUnwritten a quarter second.
func TestNetworkLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		state := t.TempDir()
		p, _ := projectfs.Canonical(t.TempDir())
		n := buildNetwork(&fakePolicySource{}, state, tableResolver{}, func() []netip.Addr { return nil })
		var heard []projectfs.NetLogEntry
		stop, _ := n.WatchLog(p, func(e projectfs.NetLogEntry) { heard = append(heard, e) })
		n.Record(p, projectfs.NetLogEntry{Time: 1, Host: "example.org", Port: 443, Protocol: "tcp", Decision: "allow", By: "rule"})
		n.Record("/q", projectfs.NetLogEntry{Time: 2, Host: "other.example", Port: 443, Protocol: "tcp", Decision: "deny", By: "preset"})
		if len(heard) != 1 || heard[0].Host != "example.org" {
			t.Errorf("heard %+v", heard)
		}
		if got, err := n.Log(p, 10); len(got) != 1 {
			t.Errorf("before the write: %+v, %v", got, err)
		}
		time.Sleep(logFlushEvery)
		synctest.Wait()
		if got, _ := projectfs.NewNetLog(state).Tail(p, 10); len(got) != 1 {
			t.Errorf("written: %+v", got)
		}
		stop()
		for i := range 3 * maxUnwritten {
			n.Record(p, projectfs.NetLogEntry{Time: int64(i), Host: "flood.example", Port: 443, Protocol: "tcp", Decision: "deny", By: "preset"})
		}
		if len(heard) != 1 {
			t.Errorf("a stopped watch heard %d entries", len(heard))
		}
		n.close()
		if got, _ := projectfs.NewNetLog(state).Tail(p, 0); len(got) != 1+maxUnwritten {
			t.Errorf("after a flood: %d entries, want %d", len(got), 1+maxUnwritten)
		}
	})
}

// TestNetworkFollowsStops: a sandbox that stops ends its session
// decisions and its waiting questions.
func TestNetworkFollowsStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := testNetwork(t, &fakePolicySource{})
		n.broker.Listen("/p", func(permission.Event) {})
		events := make(chan service.Event, 4)
		go n.followStops(events)
		got := make(chan permission.Answer, 1)
		go func() {
			got <- n.broker.Ask(context.Background(), permission.Request{Project: "/p", Kind: permission.KindNetwork, Rule: "example.org:443"})
		}()
		synctest.Wait()
		events <- service.Event{Kind: service.EventState, Project: "/p", State: &service.State{Status: service.StatusRunning}}
		synctest.Wait()
		select {
		case a := <-got:
			t.Fatalf("a running sandbox's question ended: %+v", a)
		default:
		}
		events <- service.Event{Kind: service.EventState, Project: "/p", State: &service.State{Status: service.StatusStopped}}
		if a := <-got; a.Reason != permission.ReasonStopped {
			t.Errorf("answer = %+v", a)
		}
		close(events)
	})
}

// BenchmarkQuestionReachesTheListener: from a connection judged to the
// question in a listener's hands (what the client's notification is sent
// from), answered at once: the sidecar's part of the 50 ms a question may
// take to reach the client.
func BenchmarkQuestionReachesTheListener(b *testing.B) {
	n := buildNetwork(&fakePolicySource{}, b.TempDir(), tableResolver{"example.org": {netip.MustParseAddr("93.184.215.14")}},
		func() []netip.Addr { return nil })
	asked := make(chan permission.Question, 1)
	n.broker.Listen("/p", func(e permission.Event) {
		if e.Asked != nil {
			asked <- *e.Asked
		}
	})
	req := netpolicy.Request{Project: "/p", Names: []string{"example.org"}, Port: 443, Protocol: "tcp"}
	var reach time.Duration
	for b.Loop() {
		done := make(chan netpolicy.Decision, 1)
		start := time.Now()
		go func() { done <- n.judge.Judge(context.Background(), req) }()
		q := <-asked
		reach += time.Since(start)
		n.broker.Answer(q.ID, permission.Answer{Decision: permission.AllowOnce})
		if d := <-done; !d.Allow {
			b.Fatalf("decision = %+v", d)
		}
	}
	b.ReportMetric(float64(reach.Nanoseconds())/float64(b.N), "ns/question")
}

// BenchmarkJudgeThroughTheLayers is a cached allow as a connection pays it
// here: the layers asked (the decisions file's stat, the project's settings
// kept for a second), the policy assembled and judged, the answer cached.
func BenchmarkJudgeThroughTheLayers(b *testing.B) {
	rule, _ := netpolicy.ParseRule("example.org:443")
	n := buildNetwork(&fakePolicySource{user: netpolicy.Config{Allow: []netpolicy.Rule{rule}}}, b.TempDir(),
		tableResolver{"example.org": {netip.MustParseAddr("93.184.215.14")}}, interfaceAddrs)
	req := netpolicy.Request{Project: "/p", Names: []string{"example.org"}, Port: 443, Protocol: "tcp"}
	ctx := context.Background()
	if d := n.judge.Judge(ctx, req); !d.Allow {
		b.Fatalf("decision = %+v", d)
	}
	b.ReportAllocs()
	for b.Loop() {
		n.judge.Judge(ctx, req)
	}
}
