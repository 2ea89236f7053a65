package readiness

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

// fakeDesktop is a container whose looks and probes follow a script: look
// i (from 1) sees looks[min(i, len)-1], and the probe of look i answers
// probe(i). Wait hands back the number of the look it returned on.
type fakeDesktop struct {
	looks   []Look
	lookErr error
	probe   func(look int) error
	n       int
	probed  []int // the looks probed, and the port each probed
}

func (d *fakeDesktop) Look(context.Context) (int, Look, error) {
	d.n++
	if d.lookErr != nil {
		return d.n, Look{}, d.lookErr
	}
	return d.n, d.looks[min(d.n, len(d.looks))-1], nil
}

func (d *fakeDesktop) Probe(_ context.Context, look, ws int) error {
	d.probed = append(d.probed, look, ws)
	return d.probe(look)
}

var refused = errors.New("connection refused")

func TestWait(t *testing.T) {
	up := Look{Running: true, WSPort: 6080}
	noPort := Look{Running: true, NoPort: errors.New("carry the desktop's ports: no relay yet")}
	answersAt := func(n int) func(int) error {
		return func(look int) error {
			if look >= n {
				return nil
			}
			return refused
		}
	}
	for _, tc := range []struct {
		name     string
		d        *fakeDesktop
		wantLook int    // the look Wait returns on
		wantErr  string // "" for none
		probes   int
	}{
		{"answers at the third look", &fakeDesktop{looks: []Look{up}, probe: answersAt(3)}, 3, "", 3},
		{"its port comes later", &fakeDesktop{looks: []Look{noPort, noPort, up}, probe: answersAt(1)}, 3, "", 1},
		{"exits before its desktop answers", &fakeDesktop{looks: []Look{up, {ExitCode: 137}}, probe: answersAt(9)}, 2,
			"the container exited with code 137 before its desktop was ready", 1},
		{"a viewer not the sidecar's fails at once", &fakeDesktop{looks: []Look{up},
			probe: func(int) error { return desktop.ErrViewerMismatch }}, 1, desktop.ErrViewerMismatch.Error(), 1},
		{"a VNC server not its own fails at once", &fakeDesktop{looks: []Look{up},
			probe: func(int) error { return desktop.ErrNotOurVNCServer }}, 1, desktop.ErrNotOurVNCServer.Error(), 1},
		{"the engine's error", &fakeDesktop{lookErr: errors.New("engine gone")}, 1, "engine gone", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			look, err := Wait(context.Background(), tc.d, time.Minute)
			if look != tc.wantLook || errText(err) != tc.wantErr {
				t.Errorf("Wait = look %d, %v; want look %d, %q", look, err, tc.wantLook, tc.wantErr)
			}
			if len(tc.d.probed) != 2*tc.probes {
				t.Errorf("probed %v, want %d probes", tc.d.probed, tc.probes)
			}
			for i := 1; i < len(tc.d.probed); i += 2 {
				if tc.d.probed[i] != up.WSPort {
					t.Errorf("probed port %d, want the look's %d", tc.d.probed[i], up.WSPort)
				}
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A desktop that never answers fails at the timeout with ErrNotAnswering,
// saying why the last poll failed: the probe's error, or why there was no
// port to probe.
func TestWaitTimesOutWithTheLastReason(t *testing.T) {
	for _, tc := range []struct {
		d    *fakeDesktop
		want string
	}{
		{&fakeDesktop{looks: []Look{{Running: true, WSPort: 6080}}, probe: func(int) error { return refused }}, refused.Error()},
		{&fakeDesktop{looks: []Look{{Running: true, NoPort: errors.New("no relay yet")}}}, "no relay yet"},
		{&fakeDesktop{looks: []Look{{Running: true}}}, "the container has no published noVNC port"},
	} {
		_, err := Wait(context.Background(), tc.d, 50*time.Millisecond)
		if !errors.Is(err, ErrNotAnswering) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "within 50ms") {
			t.Errorf("Wait = %v, want ErrNotAnswering within 50ms saying %q", err, tc.want)
		}
	}
}

// The caller's end is not a timeout: Wait returns ctx's error.
func TestWaitEndsWithItsCaller(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	d := &fakeDesktop{looks: []Look{{Running: true, WSPort: 6080}}, probe: func(look int) error {
		if look == 2 {
			cancel()
		}
		return refused
	}}
	if _, err := Wait(ctx, d, time.Minute); !errors.Is(err, context.Canceled) || errors.Is(err, ErrNotAnswering) {
		t.Errorf("Wait after its caller ended = %v, want context.Canceled", err)
	}
}
