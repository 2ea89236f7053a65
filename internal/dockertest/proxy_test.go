package dockertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

func TestProxyCutAndRestore(t *testing.T) {
	p := NewProxy(t)
	docker := p.Engine()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	events, err := docker.Events(ctx, map[string]string{"pilot.sandbox": TestScope})
	if err != nil {
		t.Fatalf("events through the proxy: %v", err)
	}
	for i, step := range []struct {
		do   func()
		want error // nil: the engine answers
	}{
		{func() {}, nil},
		{p.Cut, service.ErrDockerUnavailable},
		{p.Cut, service.ErrDockerUnavailable}, // a second cut changes nothing
		{p.Restore, nil},
		{p.Restore, nil},
	} {
		step.do()
		_, err := docker.Info(ctx)
		if (step.want == nil) != (err == nil) || (step.want != nil && !errors.Is(err, step.want)) {
			t.Errorf("step %d: Info: %v, want %v", i, err, step.want)
		}
		if i == 1 {
			// The cut dropped the event stream too.
			for range events {
			}
		}
	}
}
