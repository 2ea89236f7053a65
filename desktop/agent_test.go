package desktop

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// pipeSession is an agent's process made of pipes: the test reads what the
// sidecar sends from requests and answers through answers.
type pipeSession struct {
	out      *io.PipeReader // the agent's stdout, read by the sidecar
	answers  *io.PipeWriter
	in       *io.PipeWriter // the agent's stdin, written by the sidecar
	requests *io.PipeReader
}

func newPipeSession() *pipeSession {
	outR, outW := io.Pipe()
	inR, inW := io.Pipe()
	return &pipeSession{out: outR, answers: outW, in: inW, requests: inR}
}

func (s *pipeSession) Read(p []byte) (int, error)  { return s.out.Read(p) }
func (s *pipeSession) Write(p []byte) (int, error) { return s.in.Write(p) }
func (s *pipeSession) Close() error                { s.in.Close(); return nil }
func (s *pipeSession) Stderr() string              { return "" }

// answer reads one request line and answers it with line.
func (s *pipeSession) answer(t *testing.T, line string) {
	t.Helper()
	buf := make([]byte, 4096)
	if _, err := s.requests.Read(buf); err != nil {
		t.Fatalf("read request: %v", err)
	}
	if _, err := s.answers.Write([]byte(line + "\n")); err != nil {
		t.Fatalf("answer: %v", err)
	}
}

// An answer that comes after its request timed out must not keep the
// reader goroutine waiting forever for someone to take it (issue 13): the
// agent is closed on the timeout, and its reader ends.
func TestLateAnswerDoesNotStrandTheReader(t *testing.T) {
	s := newPipeSession()
	dialed := make(chan *Agent, 1)
	go func() {
		a, err := Dial(context.Background(), s)
		if err != nil {
			t.Error(err)
		}
		dialed <- a
	}()
	s.answer(t, `{"id":1}`)
	a := <-dialed
	if a == nil {
		t.FailNow()
	}
	gaveUp, answered := make(chan struct{}), make(chan struct{})
	go func() { // read the request, answer only after the caller gave up
		buf := make([]byte, 4096)
		s.requests.Read(buf)
		<-gaveUp
		s.answers.Write([]byte(`{"id":2}` + "\n")) // returns once the reader took it
		close(answered)
	}()
	_, err := a.call(context.Background(), request{Op: "move"}, 10*time.Millisecond)
	close(gaveUp)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("call = %v, want a timeout", err)
	}
	<-answered
	// The reader ends when the session's output does.
	s.answers.Close()
	select {
	case <-a.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the reader goroutine is still waiting to hand over a late answer")
	}
}

func TestRefusedRequestIsAnErrAgent(t *testing.T) {
	s := newPipeSession()
	dialed := make(chan *Agent, 1)
	go func() {
		a, _ := Dial(context.Background(), s)
		dialed <- a
	}()
	s.answer(t, `{"id":1}`)
	a := <-dialed
	defer a.Close()
	go func() {
		buf := make([]byte, 4096)
		s.requests.Read(buf)
		s.answers.Write([]byte(`{"id":2,"error":"unknown key name 'bogus'"}` + "\n"))
	}()
	err := New(fixedConn{a}, DefaultDisplay).Keys(context.Background(), "bogus")
	if !errors.Is(err, ErrAgent) || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("Keys = %v", err)
	}
}

type fixedConn struct{ a *Agent }

func (c fixedConn) Agent(context.Context) (*Agent, error)      { return c.a, nil }
func (c fixedConn) Explain(_ context.Context, err error) error { return err }
