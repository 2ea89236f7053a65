package shell

import (
	"bytes"
	"strings"
	"testing"
)

func TestFinishStopsAtBothMarkers(t *testing.T) {
	const m = "\x1eEND\x1e"
	for _, tc := range []struct {
		name           string
		stdout, stderr []string // the writes, in turn
		wantOut        string
		wantErr        string
		status         int // -2: not done
	}{
		{"both in one write", []string{"hello\n" + m + "late"}, []string{"warn" + m + "3;late"}, "hello\n", "warn", 3},
		{"a marker and status split over writes", []string{"ab\x1eE", "N", "D\x1elate", "later"}, []string{"\x1e", "END\x1e1", "24", ";x"}, "ab", "", 124},
		{"a false start of a marker", []string{"a\x1eENx", "y" + m}, []string{m + "0;"}, "a\x1eENxy", "", 0},
		{"one stream's marker only", []string{"out" + m}, []string{"err\x1eEN"}, "out", "err\x1eEN", -2},
		{"a status not yet ended", []string{m}, []string{m + "12"}, "", "", -2},
		{"no status but something else", []string{m}, []string{m + "123456789"}, "", "", -1},
		{"no marker: flushed whole", []string{"x\x1eEN"}, nil, "x\x1eEN", "", -2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			f := NewFinish(m, &out, &errOut)
			for i := 0; i < max(len(tc.stdout), len(tc.stderr)); i++ {
				if i < len(tc.stdout) {
					f.Stdout().Write([]byte(tc.stdout[i]))
				}
				if i < len(tc.stderr) {
					f.Stderr().Write([]byte(tc.stderr[i]))
				}
			}
			f.Flush()
			status, done := f.Status()
			if !done {
				status = -2
			}
			if out.String() != tc.wantOut || errOut.String() != tc.wantErr || status != tc.status {
				t.Errorf("stdout %q, stderr %q, status %d; want %q, %q, %d", out.String(), errOut.String(), status, tc.wantOut, tc.wantErr, tc.status)
			}
		})
	}
}

func TestForegroundMarkerHasNoNUL(t *testing.T) {
	a, b := NewMarker(), NewMarker()
	if a == b || strings.ContainsRune(a, 0) {
		t.Errorf("markers %q and %q", a, b)
	}
}
