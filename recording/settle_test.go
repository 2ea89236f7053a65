package recording

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// fakeContainers has the recorders listed in running, by recording ID.
type fakeContainers struct{ running map[string]bool }

func (f fakeContainers) RunAttached(context.Context, service.HelperSpec) (service.ExecSession, error) {
	panic("not used")
}

func (f fakeContainers) ListContainers(_ context.Context, labels map[string]string) ([]service.Container, error) {
	if f.running[labels[LabelRecording]] {
		return []service.Container{{ID: "recorder", Running: true}}, nil
	}
	return nil, nil
}

func TestARecordingLeftByAKilledSidecarIsFinishedWhenListed(t *testing.T) {
	dir := t.TempDir()
	r := New(nil, fakeContainers{running: map[string]bool{"20261128-060000-bbbbbbbb": true}}, Config{Dir: dir})
	sample := readSample(t)
	put := func(id string) Info {
		t.Helper()
		info := Info{ID: id, ProjectPath: "/p", ContainerName: "box", FPS: 5, State: StateRecording,
			Path: filepath.Join(dir, "box", id+".webm")}
		os.MkdirAll(filepath.Dir(info.Path), 0o700)
		// The file as a recording of at most 4 h leaves it: the
		// placeholder in its Duration.
		b := append([]byte(nil), sample...)
		s := scan(b, len(b))
		if err := s.writeDuration(bufferAt(b), 4*3600*1000); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(info.Path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := writeInfo(info); err != nil {
			t.Fatal(err)
		}
		return info
	}
	left := put("20261128-060000-aaaaaaaa")
	put("20261128-060000-bbbbbbbb") // another process records it

	list, err := r.List("/p")
	if err != nil || len(list) != 2 {
		t.Fatalf("List: %v, %v", list, err)
	}
	byID := map[string]Info{list[0].ID: list[0], list[1].ID: list[1]}
	got := byID[left.ID]
	if got.State != StateEnded || got.Reason != whyUnfinished || got.DurationMs != 10000 || got.Bytes != int64(len(sample)) {
		t.Errorf("the left recording: %+v", got)
	}
	b, _ := os.ReadFile(left.Path)
	s := scan(b, len(b))
	if d := math.Float64frombits(binary.BigEndian.Uint64(b[s.durationAt:])); d != 10000 {
		t.Errorf("its Duration reads %v ms; want its frames' 10000", d)
	}
	if again, _ := r.find(left.ID); again.State != StateEnded {
		t.Errorf("its facts on disk: %+v", again)
	}
	if other := byID["20261128-060000-bbbbbbbb"]; other.State != StateRecording {
		t.Errorf("a recording another process records was settled: %+v", other)
	}
}
