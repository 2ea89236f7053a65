package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/netpolicy"
	"github.com/pilot-sandbox/pilot-sandbox/permission"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// fakeNetwork serves Permissions with a real broker (its questions named
// q-1, q-2, ... and dated at the fake's clock), and NetworkPolicy with a
// fixed policy and a log in memory.
type fakeNetwork struct {
	broker    *permission.Broker
	delivered atomic.Int64 // events handed to the connections' listeners
	listening atomic.Int64 // the connections' listeners

	mu       sync.Mutex // guards logs, watchers and asked
	logs     map[string][]projectfs.NetLogEntry
	watchers map[string]map[*int]func(projectfs.NetLogEntry)
	asked    []chan permission.Answer
}

func newFakeNetwork(t testing.TB) *fakeNetwork {
	var n atomic.Int64
	ids := func() string { return fmt.Sprintf("q-%d", n.Add(1)) }
	now := func() time.Time { return time.UnixMilli(1700000000000) }
	return &fakeNetwork{
		broker: permission.New(projectfs.NewDecisions(t.TempDir()), permission.WithIDs(ids), permission.WithNow(now)),
		logs:   map[string][]projectfs.NetLogEntry{}, watchers: map[string]map[*int]func(projectfs.NetLogEntry){},
	}
}

func (f *fakeNetwork) Listen(project string, fn func(permission.Event)) func() {
	f.listening.Add(1)
	stop := f.broker.Listen(project, func(e permission.Event) {
		fn(e)
		f.delivered.Add(1)
	})
	return func() {
		stop()
		f.listening.Add(-1)
	}
}

func (f *fakeNetwork) Answer(id string, a permission.Answer) error { return f.broker.Answer(id, a) }

func (f *fakeNetwork) List(path string) ([]permission.Question, []permission.Rule, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return nil, nil, err
	}
	pending, rules := f.broker.List(project)
	return pending, rules, nil
}

func (f *fakeNetwork) Forget(path, rule string) (int, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return 0, err
	}
	return f.broker.Forget(project, rule)
}

// Policy is the user's allow of example.org, the repository's deny of a
// tracker (its wider preset not approved), and the decisions kept.
func (f *fakeNetwork) Policy(path string) (netpolicy.View, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return netpolicy.View{}, err
	}
	if filepath.Base(project) == "badsettings" {
		return netpolicy.View{}, &projectfs.ConfigError{File: "/home/me/.config/pilot-sandbox/config.json", Field: "network.allow", Reason: `entry 2: "a..b" has an empty label`}
	}
	rule := func(s string) netpolicy.Rule { r, _ := netpolicy.ParseRule(s); return r }
	var kept []netpolicy.Kept
	_, rules := f.broker.List(project)
	for _, r := range rules {
		kept = append(kept, netpolicy.Kept{Rule: rule(r.Rule), Allow: r.Allow(), Session: r.Source == permission.SourceSession, DecidedAt: time.UnixMilli(r.DecidedAt)})
	}
	p := netpolicy.Assemble(netpolicy.Config{Allow: []netpolicy.Rule{rule("example.org")}},
		netpolicy.Repository{Preset: "open", Deny: []netpolicy.Rule{rule("tracker.example")}}, false, kept)
	return p.View(), nil
}

func (f *fakeNetwork) Log(path string, limit int) ([]projectfs.NetLogEntry, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	entries := f.logs[project]
	return entries[max(0, len(entries)-limit):], nil
}

func (f *fakeNetwork) WatchLog(project string, fn func(projectfs.NetLogEntry)) (func(), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := new(int)
	if f.watchers[project] == nil {
		f.watchers[project] = map[*int]func(projectfs.NetLogEntry){}
	}
	f.watchers[project][key] = fn
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.watchers[project], key)
	}, nil
}

// record adds an entry to a project's log and tells its watchers, and
// says how many there were.
func (f *fakeNetwork) record(project string, e projectfs.NetLogEntry) int64 {
	f.mu.Lock()
	f.logs[project] = append(f.logs[project], e)
	var fns []func(projectfs.NetLogEntry)
	for _, fn := range f.watchers[project] {
		fns = append(fns, fn)
	}
	f.mu.Unlock()
	for _, fn := range fns {
		fn(e)
		f.delivered.Add(1)
	}
	return int64(len(fns))
}

// ask puts a network question for project, as the Judge would, in the
// background.
func (f *fakeNetwork) ask(project, rule string) {
	ch := make(chan permission.Answer, 1)
	f.mu.Lock()
	f.asked = append(f.asked, ch)
	f.mu.Unlock()
	host, port, _ := strings.Cut(rule, ":")
	n, _ := strconv.Atoi(port)
	detail, _ := json.Marshal(map[string]any{"host": host, "port": n, "protocol": "tcp"})
	go func() {
		ch <- f.broker.Ask(context.Background(), permission.Request{Project: project, Kind: permission.KindNetwork, Rule: rule,
			Summary: "connect to " + rule + " (tcp)", Detail: json.RawMessage(detail),
			Cause: map[string]string{"tool": "sandbox_exec", "requestId": "7"}, Timeout: time.Minute})
	}()
}
