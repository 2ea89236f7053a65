package egress

import (
	"container/list"
	"crypto/rand"
	"encoding/hex"
	"sync"
)

// ProxyURL is the explicit proxy inside every sandbox with a network
// (proxy.py's HTTP_PORT).
const ProxyURL = "http://127.0.0.1:15080"

// CauseEnv names the variable that carries an exec's cause id.
const CauseEnv = "PILOT_CAUSE"

// noProxy is what goes direct: the sandbox's own loopback, never judged.
const noProxy = "localhost,127.0.0.1,::1"

// ExecEnv is the environment every exec the sidecar starts in a sandbox
// with a network gets: the explicit proxy, for the programs that honour
// it (they then hear why a destination is denied, in a 403), and an
// opaque id of what started it, which the connection's cause is looked up
// by. A program that ignores or changes them is judged all the same.
func (e *Enforcer) ExecEnv(c Cause) []string {
	return []string{
		"HTTP_PROXY=" + ProxyURL, "HTTPS_PROXY=" + ProxyURL,
		"http_proxy=" + ProxyURL, "https_proxy=" + ProxyURL,
		"NO_PROXY=" + noProxy, "no_proxy=" + noProxy,
		CauseEnv + "=" + e.causes.add(c),
	}
}

// CauseOf returns the cause an exec's id stands for, if it is still kept.
func (e *Enforcer) CauseOf(id string) (Cause, bool) { return e.causes.get(id) }

// causesSize bounds the causes kept: the most recent execs'.
const causesSize = 1024

// causes maps exec ids to their causes, forgetting the oldest.
type causes struct {
	mu    sync.Mutex // guards byID and order
	byID  map[string]*list.Element
	order *list.List // of causeEntry, newest first
}

type causeEntry struct {
	id    string
	cause Cause
}

func newCauses() *causes { return &causes{byID: map[string]*list.Element{}, order: list.New()} }

func (c *causes) add(cause Cause) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	id := hex.EncodeToString(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.order.Len() >= causesSize {
		old := c.order.Remove(c.order.Back()).(causeEntry)
		delete(c.byID, old.id)
	}
	c.byID[id] = c.order.PushFront(causeEntry{id: id, cause: cause})
	return id
}

func (c *causes) get(id string) (Cause, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[id]
	if !ok {
		return Cause{}, false
	}
	return el.Value.(causeEntry).cause, true
}
