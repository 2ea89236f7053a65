package netpolicy

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
)

// fakeLayers is a policy held in memory.
type fakeLayers struct {
	user     Config
	userErr  error
	repo     Repository
	approved bool
	kept     []Kept
	host     []netip.Addr
}

func (l *fakeLayers) User() (Config, error) { return l.user, l.userErr }
func (l *fakeLayers) Repository(string) (Repository, bool, error) {
	return l.repo, l.approved, nil
}
func (l *fakeLayers) Kept(string) []Kept            { return l.kept }
func (l *fakeLayers) HostAddrs(string) []netip.Addr { return l.host }

// fakeResolver answers from a table and counts the questions.
type fakeResolver struct {
	answers map[string][]netip.Addr
	calls   atomic.Int64
	// block, when set, holds every lookup until it is closed.
	block chan struct{}
}

func (r *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.calls.Add(1)
	if r.block != nil {
		select {
		case <-r.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if a, ok := r.answers[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

// fakeAsker answers every question the same way and keeps them.
type fakeAsker struct {
	answer Answer
	mu     sync.Mutex // guards asked
	asked  []Question
}

func (a *fakeAsker) Ask(ctx context.Context, q Question) Answer {
	a.mu.Lock()
	a.asked = append(a.asked, q)
	a.mu.Unlock()
	return a.answer
}

func addrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, a := range s {
		out[i] = netip.MustParseAddr(a)
	}
	return out
}

func rules(s ...string) []Rule {
	out := make([]Rule, len(s))
	for i, r := range s {
		out[i] = mustRule(r)
	}
	return out
}
