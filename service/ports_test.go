package service

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestTakenPortsAreTriedAgain(t *testing.T) {
	taken := fmt.Errorf("%w: listen tcp4 127.0.0.1:32770: bind: address already in use", ErrPortInUse)
	for _, tc := range []struct {
		name     string
		failures int
		ok       bool
	}{
		{"taken twice", 2, true},
		{"taken every time", portAttempts, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			dir := project(t)
			for range tc.failures {
				h.docker.startErrs = append(h.docker.startErrs, taken)
			}
			st, err := h.m.Start(context.Background(), dir)
			var retries int
			for _, ev := range h.drain() {
				if ev.Kind == EventProgress && strings.Contains(ev.Progress.Message, "was taken; starting again") {
					retries++
				}
			}
			switch {
			case tc.ok && (err != nil || st.Status != StatusRunning):
				t.Errorf("start: %+v, %v", st, err)
			case !tc.ok && (!errors.Is(err, ErrStartFailed) || !errors.Is(err, ErrPortInUse) || !strings.Contains(err.Error(), "taken 5 times in a row")):
				t.Errorf("start: %v, want a start failure saying the ports were taken", err)
			case retries != min(tc.failures, portAttempts-1):
				t.Errorf("%d retries announced", retries)
			}
			if n := h.docker.count("StartContainer"); n != min(tc.failures+1, portAttempts) {
				t.Errorf("%d starts", n)
			}
		})
	}
}
