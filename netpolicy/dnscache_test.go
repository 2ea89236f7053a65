package netpolicy

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestDNSCacheKeepsAnswersBriefly: within the TTL one lookup serves every
// connection; after it the name is asked again. Failures are kept for a
// shorter time. (synctest's clock: time passes only by the test's word.)
func TestDNSCacheKeepsAnswersBriefly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &fakeResolver{answers: world}
		c := newDNSCache(r)
		ctx := context.Background()
		for range 3 {
			if a, err := c.lookup(ctx, "example.org"); err != nil || len(a) != 2 {
				t.Fatalf("lookup = %v, %v", a, err)
			}
		}
		if n := r.calls.Load(); n != 1 {
			t.Errorf("3 lookups within the TTL asked the resolver %d times, want 1", n)
		}
		time.Sleep(dnsTTL + time.Second)
		c.lookup(ctx, "example.org")
		if n := r.calls.Load(); n != 2 {
			t.Errorf("a lookup after the TTL: %d questions, want 2", n)
		}
		for range 3 {
			if _, err := c.lookup(ctx, "nowhere.test"); err == nil {
				t.Fatal("nowhere.test resolved")
			}
		}
		if n := r.calls.Load(); n != 3 {
			t.Errorf("3 failing lookups asked %d times, want 1 more (3)", n)
		}
		time.Sleep(dnsFailTTL + time.Second)
		c.lookup(ctx, "nowhere.test")
		if n := r.calls.Load(); n != 4 {
			t.Errorf("a failing lookup after its TTL: %d questions, want 4", n)
		}
	})
}

// TestDNSCacheOneLookupForABurst: concurrent connections to one name wait
// for one lookup; one that gives up leaves the others their answer.
func TestDNSCacheOneLookupForABurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &fakeResolver{answers: world, block: make(chan struct{})}
		c := newDNSCache(r)
		var wg sync.WaitGroup
		got := make([]int, 10)
		for i := range got {
			wg.Go(func() {
				a, _ := c.lookup(context.Background(), "example.org")
				got[i] = len(a)
			})
		}
		quitter, cancel := context.WithCancel(context.Background())
		quit := make(chan error)
		go func() { _, err := c.lookup(quitter, "example.org"); quit <- err }()
		synctest.Wait()
		cancel()
		if err := <-quit; err != context.Canceled {
			t.Errorf("a cancelled lookup: %v", err)
		}
		close(r.block)
		wg.Wait()
		if n := r.calls.Load(); n != 1 {
			t.Errorf("11 concurrent lookups asked the resolver %d times, want 1", n)
		}
		for i, n := range got {
			if n != 2 {
				t.Errorf("lookup %d got %d addresses, want 2", i, n)
			}
		}
	})
}

// TestDNSCacheIsBounded: a flood of names keeps at most dnsMaxEntries,
// dropping the least recently used, and at most dnsMaxFlights lookups
// under way.
func TestDNSCacheIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		answers := map[string][]netip.Addr{}
		for i := range dnsMaxEntries + 100 {
			answers[fmt.Sprintf("h%d.test", i)] = addrs("93.184.215.14")
		}
		r := &fakeResolver{answers: answers}
		c := newDNSCache(r)
		ctx := context.Background()
		c.lookup(ctx, "h0.test")
		for i := 1; i < dnsMaxEntries+100; i++ {
			c.lookup(ctx, fmt.Sprintf("h%d.test", i))
			if i%1000 == 0 {
				c.lookup(ctx, "h0.test") // kept recent
			}
		}
		if n := c.order.Len(); n != dnsMaxEntries || len(c.entries) != dnsMaxEntries {
			t.Errorf("the cache holds %d (%d), want %d", n, len(c.entries), dnsMaxEntries)
		}
		if _, ok := c.entries["h0.test"]; !ok {
			t.Error("a name in use was dropped")
		}
		if _, ok := c.entries["h1.test"]; ok {
			t.Error("the least recently used name was kept")
		}

		blocked := &fakeResolver{answers: world, block: make(chan struct{})}
		c = newDNSCache(blocked)
		for i := range dnsMaxFlights {
			go c.lookup(ctx, fmt.Sprintf("f%d.test", i))
		}
		synctest.Wait()
		if _, err := c.lookup(ctx, "one-more.test"); err != errTooManyLookups {
			t.Errorf("a lookup past %d under way: %v, want %v", dnsMaxFlights, err, errTooManyLookups)
		}
		close(blocked.block)
	})
}

// TestDNSCacheGivesUpOnASlowResolver: a resolver that never answers costs
// a lookup lookupTimeout, then the name fails.
func TestDNSCacheGivesUpOnASlowResolver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &fakeResolver{answers: world, block: make(chan struct{})}
		c := newDNSCache(r)
		start := time.Now()
		if _, err := c.lookup(context.Background(), "example.org"); err == nil {
			t.Fatal("a lookup that never finished succeeded")
		}
		if waited := time.Since(start); waited != lookupTimeout {
			t.Errorf("waited %s, want %s", waited, lookupTimeout)
		}
	})
}
