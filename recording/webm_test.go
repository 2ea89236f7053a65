package recording

import (
	"encoding/binary"
	"math"
	"os"
	"testing"
)

// testdata/still-10s.webm is what pilot-record wrote for 10 s of a still
// desktop at 5 fps, with -t 10 (its Duration 10000 ms): 50 frames.
func readSample(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/still-10s.webm")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func scan(b []byte, chunk int) *scanner {
	s := newScanner()
	for len(b) > 0 {
		n := min(chunk, len(b))
		s.Write(b[:n])
		b = b[n:]
	}
	return s
}

func TestScannerFindsFramesAndDurationInAnyChunking(t *testing.T) {
	b := readSample(t)
	for _, chunk := range []int{1, 3, 7, 64, 4096, len(b)} {
		s := scan(b, chunk)
		if s.bad || s.frames != 50 || s.durationMs(5) != 10000 || s.durationSz != 8 {
			t.Fatalf("chunk %d: bad %v, frames %d, duration %d ms, Duration's size %d",
				chunk, s.bad, s.frames, s.durationMs(5), s.durationSz)
		}
		got := math.Float64frombits(binary.BigEndian.Uint64(b[s.durationAt:]))
		if got != 10000 {
			t.Fatalf("chunk %d: the Duration found reads %v, want the file's 10000", chunk, got)
		}
	}
}

func TestScannerOfATruncatedStreamCountsWhatArrived(t *testing.T) {
	b := readSample(t)
	s := scan(b[:len(b)/2], 100)
	if s.bad || s.frames == 0 || s.frames >= 50 || s.durationMs(5) >= 10000 {
		t.Fatalf("half the file: bad %v, %d frames, %d ms", s.bad, s.frames, s.durationMs(5))
	}
}

type bufferAt []byte

func (b bufferAt) WriteAt(p []byte, off int64) (int, error) { return copy(b[off:], p), nil }

func TestWriteDurationReplacesThePlaceholderInPlace(t *testing.T) {
	b := readSample(t)
	s := scan(b, 4096)
	if err := s.writeDuration(bufferAt(b), 4321); err != nil {
		t.Fatal(err)
	}
	again := scan(b, 4096)
	got := math.Float64frombits(binary.BigEndian.Uint64(b[again.durationAt:]))
	if got != 4321 || again.frames != 50 {
		t.Fatalf("after the write: Duration %v, %d frames; want 4321 and 50", got, again.frames)
	}
}

func TestScannerGivesUpOnWhatIsNotWebM(t *testing.T) {
	s := scan(make([]byte, 1000), 10)
	if !s.bad || s.frames != 0 || s.durationAt != -1 {
		t.Fatalf("zeros: bad %v, frames %d, Duration at %d", s.bad, s.frames, s.durationAt)
	}
	if err := s.writeDuration(bufferAt(make([]byte, 8)), 1); err != nil {
		t.Fatal(err)
	}
}
