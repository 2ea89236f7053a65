package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/pilot-sandbox/pilot-sandbox/netpolicy"
	"github.com/pilot-sandbox/pilot-sandbox/permission"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// screen is a terminal's output.
type screen struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func networkRequest(host, command string) permission.Request {
	return permission.Request{Project: "/p", Kind: permission.KindNetwork, Rule: host + ":443", Summary: "connect to " + host,
		Detail: networkDetail{Host: host, Port: 443, Protocol: "tcp", Process: &netpolicy.Process{PID: 1, Command: command}}}
}

// terminal is a broker whose questions are asked on a fake terminal.
type terminal struct {
	broker *permission.Broker
	keys   *io.PipeWriter
	screen *screen
	stop   context.CancelFunc
}

func newTerminal(t *testing.T) *terminal {
	b := permission.New(projectfs.NewDecisions(t.TempDir()))
	in, keys := io.Pipe()
	out := &screen{}
	ctx, cancel := context.WithCancel(context.Background())
	askOnTerminal(ctx, b, "/p", in, out)
	return &terminal{broker: b, keys: keys, screen: out, stop: func() { cancel(); keys.Close() }}
}

// ask asks in the background; the answer comes on the channel.
func (term *terminal) ask(r permission.Request) <-chan permission.Answer {
	ch := make(chan permission.Answer, 1)
	go func() { ch <- term.broker.Ask(context.Background(), r) }()
	return ch
}

func (term *terminal) typeLine(s string) {
	go term.keys.Write([]byte(s + "\n"))
}

func TestAskOnTheTerminal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		term := newTerminal(t)
		defer term.stop()
		got := term.ask(networkRequest("example.org", "curl  https://example.org"))
		synctest.Wait()
		if want := "pilot-sandbox: allow example.org:443 for `curl https://example.org`? [o]nce / [s]ession / [a]lways / [d]eny "; !strings.Contains(term.screen.String(), want) {
			t.Fatalf("screen:\n%s\nwant %q", term.screen, want)
		}
		term.typeLine("maybe")
		synctest.Wait()
		if !strings.Contains(term.screen.String(), "answer o, s, a or d") {
			t.Errorf("a wrong answer was not asked again:\n%s", term.screen)
		}
		term.typeLine("s")
		if a := <-got; a.Decision != permission.AllowSession {
			t.Errorf("answer = %+v", a)
		}
		got = term.ask(networkRequest("tracker.example", "wget tracker.example"))
		synctest.Wait()
		term.typeLine("d not on my machine")
		if a := <-got; a.Allowed() || a.Reason != "not on my machine" || a.By != permission.ByUser {
			t.Errorf("answer = %+v", a)
		}
	})
}

// A question answered elsewhere (the panel, its expiry) is left; what is
// typed then answers nothing that comes later.
func TestTheTerminalLetsGoOfAQuestionAnsweredElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		term := newTerminal(t)
		got := term.ask(networkRequest("example.org", "curl https://example.org"))
		synctest.Wait()
		pending, _ := term.broker.List("/p")
		term.broker.Answer(pending[0].ID, permission.Answer{Decision: permission.AllowOnce})
		<-got
		synctest.Wait()
		if !strings.Contains(term.screen.String(), "(answered elsewhere, or no longer waiting)") {
			t.Errorf("screen:\n%s", term.screen)
		}
		term.typeLine("a")
		synctest.Wait()
		next := term.ask(networkRequest("other.example", "curl other.example"))
		synctest.Wait()
		if p, rules := term.broker.List("/p"); len(p) != 1 || len(rules) != 0 {
			t.Errorf("a line typed between questions answered one: pending %+v, rules %+v", p, rules)
		}
		term.stop()
		synctest.Wait()
		if a := term.broker.Ask(context.Background(), networkRequest("third.example", "x")); a.Reason != permission.ReasonNoOne {
			t.Errorf("after the command: %+v, want no one to ask", a)
		}
		term.broker.Stopped("/p")
		<-next
	})
}
