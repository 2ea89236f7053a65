package egress

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"
)

// maxJudging bounds the judgements and lookups under way for one sandbox;
// beyond it a connection is denied and a query unanswered at once, so a
// flood from inside costs bounded memory and goroutines.
const maxJudging = 256

// sandbox is what this process knows of one run of a sandbox's network:
// the names it was given addresses for, its connection log, and how to
// judge what it attempts.
type sandbox struct {
	project, id string
	judge       Judge
	resolver    Resolver
	// hints, once the run's finder is started (who.go).
	hints atomic.Pointer[func(ctx context.Context, srcPort int) (*Process, *Cause)]
	book  *addressBook
	log   *connLog
}

// carrier is one proxy's conversation: the judgements of the connections
// and lookups it reports, each in a goroutine of its own that ends with
// ctx (the carrier's) at the latest.
type carrier struct {
	sb    *sandbox
	ch    *channel
	slots chan struct{}
}

func newCarrier(sb *sandbox, ch *channel) *carrier {
	return &carrier{sb: sb, ch: ch, slots: make(chan struct{}, maxJudging)}
}

// serve answers the proxy until its channel ends (ctx ending ends the
// judgements under way, whose connections the proxy then drops).
func (c *carrier) serve(ctx context.Context) error {
	for {
		m, err := c.ch.next()
		if err != nil {
			return err
		}
		switch m.T {
		case "conn":
			c.dispatch(ctx, m, c.decide, verdict{ID: m.ID, Reason: "pilot-sandbox: too many connections are waiting; try again"})
		case "dns":
			c.dispatch(ctx, m, c.lookup, dnsReply{ID: m.ID})
		case "done":
			c.sb.log.finish(m.ID, m.Up, m.Down, m.Error)
		default:
			return fmt.Errorf("%w: message %q", errProtocol, m.T)
		}
	}
}

// dispatch runs f for m in a goroutine when a slot is free, and sends
// busy at once when none is.
func (c *carrier) dispatch(ctx context.Context, m proxyMsg, f func(context.Context, proxyMsg) any, busy any) {
	select {
	case c.slots <- struct{}{}:
		go func() {
			defer func() { <-c.slots }()
			v := f(ctx, m)
			if ctx.Err() != nil {
				// The run ended while this was judged: a judge cut off by
				// it did not decide, and the proxy, losing its channel,
				// tells the held connection why itself.
				return
			}
			c.ch.send(v)
		}()
	default:
		c.ch.send(busy)
	}
}

func (c *carrier) lookup(ctx context.Context, m proxyMsg) any {
	proto := "udp"
	if m.Proto == "tcp" {
		proto = "tcp"
	}
	return dnsReply{ID: m.ID, A: c.sb.answer(ctx, m.Q, proto)}
}

// decide judges one connection and tells the proxy where to dial.
func (c *carrier) decide(ctx context.Context, m proxyMsg) any {
	begun := time.Now()
	req, refusal := c.sb.request(m)
	hints := &learning{look: c.sb.hintsFunc(), port: m.Src}
	var d Decision
	if refusal == "" {
		req.Learn = hints.get
		d = c.sb.judge.Judge(ctx, req)
	} else {
		d = Decision{By: "fixed", Reason: refusal}
	}
	host := hostLabel(req.Names, req.Addr)
	dial := dialStrings(d.Dial)
	if d.Allow && len(dial) == 0 {
		d = Decision{By: "fixed", Reason: fmt.Sprintf("pilot-sandbox blocked %s:%d: it has no address a sandbox may reach", host, req.Port)}
	}
	d.Allow = d.Allow && len(dial) > 0
	if !d.Allow && d.Reason == "" {
		d.Reason = defaultReason(host, req.Port)
	}
	if m.Of != 0 {
		if !d.Allow {
			c.sb.log.refuse(m.Of, d)
		}
		return verdict{ID: m.ID, Allow: d.Allow, Reason: d.Reason}
	}
	e := Entry{Time: begun, Project: c.sb.project, Host: host, Port: req.Port, Protocol: "tcp",
		Allowed: d.Allow, By: d.By, Rule: d.Rule, Reason: d.Reason}
	if d.Allow {
		e.Process, e.Cause = hints.learned() // only if the judge asked
		c.sb.log.add(m.ID, e)
		return verdict{ID: m.ID, Allow: true, Dial: dial}
	}
	// The agent's line counts the refusal at once; its entry names who
	// opened the connection, looked up while the connection is still held.
	c.sb.log.blockNow(e)
	e.Process, e.Cause = hints.get(ctx)
	c.sb.log.add(m.ID, e)
	return verdict{ID: m.ID, Reason: d.Reason}
}

// request is the Judge's request for a connection the proxy reported, or
// why it is refused before any judge sees it.
func (s *sandbox) request(m proxyMsg) (Request, string) {
	req := Request{Project: s.project, Port: m.Port, Protocol: "tcp"}
	if m.Dst != "" {
		a, err := netip.ParseAddr(m.Dst)
		if err != nil {
			return req, fmt.Sprintf("pilot-sandbox blocked a connection to port %d: no such address", m.Port)
		}
		req.Addr = a.Unmap()
	}
	if m.Port < 1 || m.Port > 65535 {
		return req, fmt.Sprintf("pilot-sandbox blocked a connection to port %d: no such port", m.Port)
	}
	names, ok := hostNames(m.Names)
	if !ok {
		return req, fmt.Sprintf("pilot-sandbox blocked a connection to port %d: it named a host that is not a DNS host name (%s)", m.Port, printable(m.Names))
	}
	if synthetic.Contains(req.Addr) {
		name, known := s.book.nameOf(req.Addr)
		if !known {
			return req, fmt.Sprintf("pilot-sandbox blocked %s:%d: a DNS answer this sandbox no longer holds; look the name up again", req.Addr, m.Port)
		}
		names = append([]string{name}, removed(names, name)...)
		req.Addr = netip.Addr{}
	}
	req.Names = names
	return req, ""
}

// hintsFunc is how the run learns who opened a connection, nil while it
// cannot (its finder not started, or failed).
func (s *sandbox) hintsFunc() func(context.Context, int) (*Process, *Cause) {
	if h := s.hints.Load(); h != nil {
		return *h
	}
	return nil
}

func dialStrings(addrs []netip.Addr) []string {
	var out []string
	for _, a := range addrs {
		if dialable(a) {
			out = append(out, a.Unmap().String())
		}
	}
	return out
}

func removed(list []string, s string) []string {
	out := list[:0:0]
	for _, v := range list {
		if v != s {
			out = append(out, v)
		}
	}
	return out
}

// printable quotes names from the sandbox for a message, bounded.
func printable(names []string) string {
	s := fmt.Sprintf("%q", strings.Join(names, ","))
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return s
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
