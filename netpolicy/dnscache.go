package netpolicy

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// The Judge resolves a name itself, on the host, and hands egress the
// addresses it checked: the sandbox never chooses where a name leads. Its
// answers are kept briefly, so that the connections a page or a package
// install opens to one host in a burst pay for one lookup; the host's
// resolver gives no TTL, so the time is fixed and short, bounding how long
// a changed record goes unseen.
const (
	dnsTTL        = 30 * time.Second
	dnsFailTTL    = 5 * time.Second // a failure, kept so a flood of retries does not become a flood of lookups
	dnsMaxEntries = 4096
	// dnsMaxFlights bounds the lookups under way at once: each is a
	// goroutine until the resolver answers or lookupTimeout passes.
	dnsMaxFlights = 64
	lookupTimeout = 5 * time.Second
	// maxAddrs bounds the addresses kept of one answer.
	maxAddrs = 16
)

var errTooManyLookups = errors.New("too many lookups under way; try again")

type dnsCache struct {
	resolver Resolver

	mu      sync.Mutex // guards entries, order and flights
	entries map[string]*list.Element
	order   *list.List // of *dnsEntry, the most recently used first
	flights map[string]*flight
}

type dnsEntry struct {
	name    string
	addrs   []netip.Addr
	err     error
	expires time.Time
}

// flight is one lookup under way; every caller for its name waits for it.
type flight struct {
	done  chan struct{} // closed when addrs and err are set
	addrs []netip.Addr
	err   error
}

func newDNSCache(r Resolver) *dnsCache {
	return &dnsCache{resolver: r, entries: map[string]*list.Element{}, order: list.New(), flights: map[string]*flight{}}
}

// lookup returns the name's addresses, IPv4 first, from the cache or the
// resolver, until ctx ends.
func (c *dnsCache) lookup(ctx context.Context, name string) ([]netip.Addr, error) {
	c.mu.Lock()
	if el, ok := c.entries[name]; ok {
		e := el.Value.(*dnsEntry)
		if time.Now().Before(e.expires) {
			c.order.MoveToFront(el)
			c.mu.Unlock()
			return e.addrs, e.err
		}
		c.order.Remove(el)
		delete(c.entries, name)
	}
	f, ok := c.flights[name]
	if !ok {
		if len(c.flights) >= dnsMaxFlights {
			c.mu.Unlock()
			return nil, errTooManyLookups
		}
		f = &flight{done: make(chan struct{})}
		c.flights[name] = f
		go c.resolve(name, f) // ends within lookupTimeout
	}
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.addrs, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// resolve asks the resolver, independently of any one caller's context
// (the others still wait for it), and keeps the answer.
func (c *dnsCache) resolve(name string, f *flight) {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	addrs, err := c.resolver.LookupNetIP(ctx, "ip", name)
	if err == nil && len(addrs) == 0 {
		err = errors.New("no address")
	}
	addrs = ordered(addrs)
	ttl := dnsTTL
	if err != nil {
		addrs, ttl = nil, dnsFailTTL
	}
	f.addrs, f.err = addrs, err
	c.mu.Lock()
	delete(c.flights, name)
	c.keep(&dnsEntry{name: name, addrs: addrs, err: err, expires: time.Now().Add(ttl)})
	c.mu.Unlock()
	close(f.done)
}

// keep stores an entry, dropping the least recently used past the bound.
// c.mu is held.
func (c *dnsCache) keep(e *dnsEntry) {
	c.entries[e.name] = c.order.PushFront(e)
	for c.order.Len() > dnsMaxEntries {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*dnsEntry).name)
	}
}

// ordered puts IPv4 first (a sandbox's network has no IPv6 route unless
// the engine gives it one), keeps the resolver's order otherwise, and
// bounds the list.
func ordered(addrs []netip.Addr) []netip.Addr {
	addrs = slices.Clone(addrs)
	slices.SortStableFunc(addrs, func(a, b netip.Addr) int {
		return cmp.Compare(family(a), family(b))
	})
	return addrs[:min(len(addrs), maxAddrs)]
}

func family(a netip.Addr) int {
	if a.Unmap().Is4() {
		return 4
	}
	return 6
}
