package rpc

import (
	"context"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/args"
)

// A connection runs at most MaxSandboxCalls calls at once on one sandbox;
// one more is busy at once, while another sandbox's go on; a call that
// ends makes room.
func TestSandboxCallsAreBounded(t *testing.T) {
	gates := map[string]chan struct{}{"/p/a": make(chan struct{}), "/p/b": make(chan struct{})}
	entered := make(chan struct{})
	m := perSandbox(method{run: func(ctx context.Context, _ *session, p any) (any, error) {
		entered <- struct{}{}
		<-gates[p.(projectParams).sandbox()]
		return nil, nil
	}})
	sess := &session{}
	ended := make(chan error, 2*MaxSandboxCalls) // every call's, once counted out
	call := func(project string) chan error {
		done := make(chan error, 1)
		go func() {
			_, err := m.run(context.Background(), sess, projectParams{ProjectPath: args.Path(project)})
			done <- err
			ended <- err
		}()
		return done
	}
	for range MaxSandboxCalls {
		call("/p/a")
		<-entered
	}
	err := <-call("/p/a")
	if w := toWire(err); w.Code != codeBusy || !strings.Contains(string(*w.Data), `"limit":16`) {
		t.Fatalf("call %d on one sandbox: %v, want busy with data.limit", MaxSandboxCalls+1, err)
	}
	other := call("/p/b")
	<-entered // another sandbox's call runs
	gates["/p/a"] <- struct{}{}
	<-ended // the busy call's
	<-ended // the one let through
	again := call("/p/a")
	<-entered
	close(gates["/p/a"])
	close(gates["/p/b"])
	if err := <-again; err != nil {
		t.Errorf("after a call ended: %v", err)
	}
	if err := <-other; err != nil {
		t.Errorf("another sandbox's call: %v", err)
	}
}
