package egress

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

func TestHostName(t *testing.T) {
	for in, want := range map[string]string{
		"Example.COM.": "example.com", "_git._tcp.example.com": "_git._tcp.example.com",
		"xn--e1afmkfd.xn--p1ai": "xn--e1afmkfd.xn--p1ai", "a-b.c": "a-b.c",
	} {
		if got, ok := hostName(in); !ok || got != want {
			t.Errorf("hostName(%q) = %q, %v", in, got, ok)
		}
	}
	long := strings.Repeat("a.", 127) + "b" // 255 characters
	for _, bad := range []string{"", ".", "a..b", "-a.b", "a-.b", "exa\x00mple.com", "exаmple.com" /* Cyrillic а */, "a b.c",
		strings.Repeat("a", 64) + ".c", long, "*.example.com", "example.com:443"} {
		if got, ok := hostName(bad); ok {
			t.Errorf("hostName(%q) accepted as %q", bad, got)
		}
	}
}

func TestDialable(t *testing.T) {
	for addr, want := range map[string]bool{
		"93.184.216.34": true, "10.1.2.3": true, "2001:db8::1": true,
		"127.0.0.1": false, "::1": false, "0.0.0.0": false, "169.254.169.254": false, "fe80::1": false,
		"224.0.0.1": false, "255.255.255.255": false, "198.18.0.1": false, "198.19.255.254": false, "::ffff:127.0.0.1": false,
	} {
		if got := dialable(netip.MustParseAddr(addr)); got != want {
			t.Errorf("dialable(%s) = %v", addr, got)
		}
	}
}

func TestAddressBook(t *testing.T) {
	b := newAddressBook()
	a := b.addressOf("a.example")
	if !synthetic.Contains(a) || b.addressOf("a.example") != a {
		t.Fatalf("a.example: %s, then %s", a, b.addressOf("a.example"))
	}
	if name, ok := b.nameOf(a); !ok || name != "a.example" {
		t.Errorf("nameOf(%s) = %q, %v", a, name, ok)
	}
	seen := map[netip.Addr]bool{a: true}
	for i := range bookSize {
		addr := b.addressOf(fmt.Sprintf("n%d.example", i))
		if seen[addr] {
			t.Fatalf("%s given twice", addr)
		}
		seen[addr] = true
	}
	if _, ok := b.nameOf(a); ok {
		t.Errorf("the least recently used name was kept beyond %d", bookSize)
	}
	if b.order.Len() != bookSize || len(b.byAddr) != bookSize {
		t.Errorf("the book holds %d names, %d addresses", b.order.Len(), len(b.byAddr))
	}
}

// fakeResolver answers TXT lookups only.
type fakeResolver struct{ *net.Resolver }

func (fakeResolver) LookupTXT(context.Context, string) ([]string, error) {
	return []string{strings.Repeat("t", 600)}, nil
}

// judgeFunc is a Judge made of a function.
type judgeFunc func(context.Context, Request) Decision

func (f judgeFunc) Judge(ctx context.Context, r Request) Decision { return f(ctx, r) }

func query(t *testing.T, name string, qtype dnsmessage.Type) []byte {
	m := dnsmessage.Message{Header: dnsmessage.Header{ID: 7, RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: dnsmessage.MustNewName(name), Type: qtype, Class: dnsmessage.ClassINET}}}
	out, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAnswers(t *testing.T) {
	allowTXT := judgeFunc(func(_ context.Context, r Request) Decision {
		return Decision{Allow: r.Names[0] == "ok.example"}
	})
	sb := &sandbox{project: "/p", judge: allowTXT, resolver: fakeResolver{net.DefaultResolver}, book: newAddressBook()}
	for _, c := range []struct {
		name   string
		qtype  dnsmessage.Type
		proto  string
		rcode  dnsmessage.RCode
		answer int
		trunc  bool
	}{
		{"a.example.", dnsmessage.TypeA, "udp", dnsmessage.RCodeSuccess, 1, false},
		{"a.example.", dnsmessage.TypeAAAA, "udp", dnsmessage.RCodeSuccess, 0, false},
		{"ok.example.", dnsmessage.TypeTXT, "tcp", dnsmessage.RCodeSuccess, 1, false},
		{"ok.example.", dnsmessage.TypeTXT, "udp", dnsmessage.RCodeSuccess, 0, false},
		{"no.example.", dnsmessage.TypeTXT, "udp", dnsmessage.RCodeRefused, 0, false},
		{"bad\\000name.example.", dnsmessage.TypeA, "udp", dnsmessage.RCodeRefused, 0, false},
	} {
		var p dnsmessage.Parser
		h, err := p.Start(sb.answer(context.Background(), query(t, c.name, c.qtype), c.proto))
		if err != nil {
			t.Fatalf("%s %s: %v", c.name, c.qtype, err)
		}
		_ = p.SkipAllQuestions()
		answers, _ := p.AllAnswers()
		if h.ID != 7 || !h.Response || h.RCode != c.rcode || len(answers) != c.answer {
			t.Errorf("%s %s over %s: %+v with %d answers", c.name, c.qtype, c.proto, h, len(answers))
		}
		if c.qtype == dnsmessage.TypeA && c.answer == 1 {
			a := answers[0].Body.(*dnsmessage.AResource).A
			if !synthetic.Contains(netip.AddrFrom4(a)) {
				t.Errorf("A answer %v is not synthetic", a)
			}
		}
		if c.qtype == dnsmessage.TypeTXT && c.proto == "udp" && c.rcode == dnsmessage.RCodeSuccess && !h.Truncated {
			t.Errorf("a 600-byte TXT over UDP was not truncated")
		}
	}
	if got := sb.answer(context.Background(), []byte("not dns"), "udp"); got != nil {
		t.Errorf("garbage answered: %x", got)
	}
}

// pipeProxy is the proxy's end of a carrier's channel, for unit tests.
type pipeProxy struct {
	conn net.Conn
	r    *bufio.Reader
}

func startCarrier(t *testing.T, judge Judge) (*sandbox, *pipeProxy) {
	ours, theirs := net.Pipe()
	t.Cleanup(func() { ours.Close(); theirs.Close() })
	sb := &sandbox{project: "/p", judge: judge, book: newAddressBook(), log: newConnLog(nil)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go newCarrier(sb, newChannel(ours)).serve(ctx)
	return sb, &pipeProxy{conn: theirs, r: bufio.NewReader(theirs)}
}

func (p *pipeProxy) ask(t *testing.T, m map[string]any) verdict {
	t.Helper()
	line, _ := json.Marshal(m)
	if _, err := p.conn.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	if m["t"] == "done" {
		return verdict{}
	}
	p.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	answer, err := p.r.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var v verdict
	if err := json.Unmarshal(answer, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCarrierJudgesByNameAndAddress(t *testing.T) {
	var mu sync.Mutex // guards got
	var got []Request
	judge := judgeFunc(func(_ context.Context, r Request) Decision {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r)
		if len(r.Names) > 0 && r.Names[0] == "ok.example" {
			return Decision{Allow: true, Dial: []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("93.184.216.34")}, By: "rule"}
		}
		return Decision{By: "preset"}
	})
	sb, p := startCarrier(t, judge)
	a := sb.book.addressOf("ok.example")
	v := p.ask(t, map[string]any{"t": "conn", "id": 1, "dst": a.String(), "port": 443, "names": []string{"OK.example.", "cdn.example"}, "kind": "tls"})
	if !v.Allow || len(v.Dial) != 1 || v.Dial[0] != "93.184.216.34" {
		t.Errorf("verdict %+v: want the one dialable address", v)
	}
	mu.Lock()
	first := got
	mu.Unlock()
	if len(first) != 1 || strings.Join(first[0].Names, ",") != "ok.example,cdn.example" || first[0].Addr.IsValid() {
		t.Errorf("request %+v: want the DNS name first, then every other name, and no address", first)
	}
	p.ask(t, map[string]any{"t": "done", "id": 1, "up": 10, "down": 20})
	v = p.ask(t, map[string]any{"t": "conn", "id": 2, "dst": "198.18.200.1", "port": 443})
	if v.Allow || !strings.Contains(v.Reason, "no longer holds") {
		t.Errorf("a stale synthetic address: %+v", v)
	}
	v = p.ask(t, map[string]any{"t": "conn", "id": 3, "dst": "203.0.113.9", "port": 80, "names": []string{"ex\u0430mple.com"}})
	if v.Allow || !strings.Contains(v.Reason, "not a DNS host name") {
		t.Errorf("a homograph: %+v", v)
	}
	v = p.ask(t, map[string]any{"t": "conn", "id": 4, "dst": "203.0.113.9", "port": 80})
	if v.Allow || v.Reason != defaultReason("203.0.113.9", 80) {
		t.Errorf("a denial with no reason of its own: %+v", v)
	}
	waitFor(t, func() bool {
		es := sb.log.list(0)
		return len(es) == 4 && es[0].BytesIn == 20 && es[0].BytesOut == 10 && es[0].Ended
	})
	if line := BlockedLine(sb.log.takeBlocked()); !strings.Contains(line, "198.18.200.1:443") || !strings.Contains(line, "203.0.113.9:80 (2 times)") {
		t.Errorf("blocked line: %q", line)
	}
	if bs := sb.log.takeBlocked(); len(bs) != 0 {
		t.Errorf("blocked again after a look: %+v", bs)
	}
}

func TestCarrierBoundsWhatWaits(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	judge := judgeFunc(func(ctx context.Context, r Request) Decision {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return Decision{}
	})
	_, p := startCarrier(t, judge)
	for i := range maxJudging {
		line, _ := json.Marshal(map[string]any{"t": "conn", "id": i + 1, "dst": "203.0.113.1", "port": 443})
		p.conn.Write(append(line, '\n'))
	}
	v := p.ask(t, map[string]any{"t": "conn", "id": 9999, "dst": "203.0.113.1", "port": 443})
	if v.ID != 9999 || v.Allow || !strings.Contains(v.Reason, "too many connections") {
		t.Errorf("the connection beyond the bound: %+v", v)
	}
}

func TestChannelRefusesLongLines(t *testing.T) {
	ours, theirs := net.Pipe()
	defer ours.Close()
	go func() { theirs.Write([]byte(strings.Repeat("x", maxMessage+1))); theirs.Close() }()
	if _, err := newChannel(ours).next(); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("a line over the bound: %v", err)
	}
}

func TestLogIsBounded(t *testing.T) {
	l := newConnLog(nil)
	for i := range logSize + 10 {
		e := Entry{Host: fmt.Sprintf("h%d", i), Port: 443, Allowed: i%2 == 0}
		if !e.Allowed {
			l.blockNow(e) // as the carrier does for a refusal
		}
		l.add(uint64(i+1), e)
	}
	if n := len(l.list(0)); n != logSize {
		t.Errorf("%d entries kept", n)
	}
	if len(l.byID) > logSize || len(l.blocked) != blockedSize {
		t.Errorf("%d open entries, %d blocked kept", len(l.byID), len(l.blocked))
	}
	l.finish(1, 5, 5, "") // rotated out: nothing to update
}

func TestExecEnv(t *testing.T) {
	e := New(nil, Config{})
	env := e.ExecEnv(Cause{Tool: "sandbox_exec", RequestID: "7"})
	joined := strings.Join(env, "\n")
	for _, want := range []string{"HTTP_PROXY=http://127.0.0.1:15080", "HTTPS_PROXY=http://127.0.0.1:15080",
		"http_proxy=http://127.0.0.1:15080", "https_proxy=http://127.0.0.1:15080", "NO_PROXY=localhost,127.0.0.1,::1"} {
		if !strings.Contains(joined, want) {
			t.Errorf("missing %s in %v", want, env)
		}
	}
	id := strings.TrimPrefix(env[len(env)-1], CauseEnv+"=")
	if c, ok := e.CauseOf(id); !ok || c.Tool != "sandbox_exec" || c.RequestID != "7" {
		t.Errorf("cause of %s: %+v %v", id, c, ok)
	}
	for range causesSize {
		e.ExecEnv(Cause{})
	}
	if _, ok := e.CauseOf(id); ok {
		t.Errorf("causes are not bounded")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("not so within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
