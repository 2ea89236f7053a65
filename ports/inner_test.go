package ports_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// TestCarryInto: the sidecar's own forward (the model gateway's) takes
// the first port nothing uses (past a port a program of the sandbox
// listens on and one the user forwards), is the same when asked again,
// carries to the host, is neither listed nor kept, cannot be taken by a
// user's forward nor closed by theirs, and ends with the run.
func TestCarryInto(t *testing.T) {
	sb := startSandbox(t)
	ctx := context.Background()
	mine, theirs := hostServer(t), hostEcho(t)
	sb.background(t, "python3 -m http.server 15700 --bind 127.0.0.1", 15700)
	if _, err := sb.x.ForwardPort(ctx, sb.project, 15701, theirs); err != nil {
		t.Fatal(err)
	}
	candidates := []int{15700, 15701, 15702, 15703}
	port, err := sb.x.CarryInto(ctx, sb.project, mine, candidates)
	if err != nil || port != 15702 {
		t.Fatalf("carried on %d, %v; want 15702", port, err)
	}
	if again, err := sb.x.CarryInto(ctx, sb.project, mine, candidates); again != port || err != nil {
		t.Errorf("asked again: %d, %v", again, err)
	}
	url := "http://127.0.0.1:15702/"
	if out, ok := run(t, sb.m, sb.project, fetchScript+url); !ok || out != "hello from the host" {
		t.Errorf("GET %s in the sandbox: %q", url, out)
	}
	listed, _ := sb.x.ForwardedPorts(sb.project)
	if len(listed) != 1 || listed[0].Port != 15701 {
		t.Errorf("listed: %+v", listed)
	}
	var arg *service.ArgumentError
	if _, err := sb.x.ForwardPort(ctx, sb.project, 15702, theirs); !errors.As(err, &arg) || !strings.Contains(err.Error(), "model gateway") {
		t.Errorf("a user's forward over it: %v", err)
	}
	if closed, _ := sb.x.CloseForward(sb.project, 15702); closed {
		t.Error("a user's close closed it")
	}
	if out, ok := run(t, sb.m, sb.project, fetchScript+url); !ok || out != "hello from the host" {
		t.Errorf("after the user's tries: %q", out)
	}
	if _, err := sb.m.Stop(ctx, sb.project); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.x.CarryInto(ctx, sb.project, mine, candidates); !errors.Is(err, service.ErrNotRunning) {
		t.Errorf("into a stopped sandbox: %v", err)
	}
	if _, err := sb.m.Start(ctx, sb.project); err != nil {
		t.Fatal(err)
	}
	if out, ok := run(t, sb.m, sb.project, fetchScript+url); ok {
		t.Errorf("it outlived its run: %q", out)
	}
	if port, err := sb.x.CarryInto(ctx, sb.project, mine, candidates); err != nil || port != 15700 {
		t.Errorf("in the new run: %d, %v", port, err)
	}
}
