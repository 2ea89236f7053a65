package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adrg/xdg"
	"github.com/rs/zerolog"
)

// TestLogRotatesWhileRunning: the log file was rotated only at start-up,
// so a long-running serve (or one fed a flood of bad requests) grew it
// without bound. Now it moves to pilot-sandbox.log.1 when it would pass
// 10 MiB, losing no line, and stderr goes on as before.
func TestLogRotatesWhileRunning(t *testing.T) {
	t.Cleanup(xdg.Reload) // after the environment is restored
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	xdg.Reload()
	var stderr bytes.Buffer
	log, closeLog, err := openLog(&stderr, zerolog.InfoLevel)
	if err != nil {
		t.Fatal(err)
	}
	const lines = 11 << 10 // of about 1 KiB: 11 MiB and more
	text := strings.Repeat("x", 1000)
	for i := range lines {
		log.Debug().Int("i", i).Msg(text)
	}
	log.Info().Msg("still on stderr")
	closeLog()

	path := filepath.Join(stateDir(), "pilot-sandbox.log")
	old, cur := logLines(t, path+".1"), logLines(t, path)
	next := 0
	for _, l := range append(old, cur...) {
		if l.Msg == text {
			if l.I != next {
				t.Fatalf("line %d comes after line %d", l.I, next-1)
			}
			next++
		}
	}
	if next != lines || len(old) == 0 {
		t.Errorf("found %d of %d lines, %d of them in the old copy", next, lines, len(old))
	}
	if !strings.Contains(stderr.String(), "still on stderr") || strings.Contains(stderr.String(), text) {
		t.Errorf("stderr has not the info line alone:\n%.300s", stderr.String())
	}
}

type logLine struct {
	I   int    `json:"i"`
	Msg string `json:"message"`
}

// logLines reads a log file, which must hold whole JSON lines and be no
// larger than the rotation size.
func logLines(t *testing.T, path string) []logLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > maxLogBytes {
		t.Errorf("%s: %d bytes, more than %d", path, len(data), maxLogBytes)
	}
	var out []logLine
	for _, raw := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var l logLine
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("%s: a line that is not JSON: %.100q", path, raw)
		}
		out = append(out, l)
	}
	return out
}

// TestLogRotatedByAnotherProcess: every process of the user appends to the
// same log. One that finds it rotated by another writes on in the new file
// instead of growing the old copy or rotating the new file away.
func TestLogRotatedByAnotherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pilot-sandbox.log")
	a, err := openLogFile(path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	b, err := openLogFile(path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	line := func(name string, size int) []byte { return []byte(name + strings.Repeat(".", size-len(name)-1) + "\n") }
	a.Write(line("a1", 600))
	b.Write(line("b1", 300))
	a.Write(line("a2", 600)) // past 1000 bytes: a rotates
	b.Write(line("b2", 300)) // b's file is the old copy now
	for file, want := range map[string]string{path + ".1": "a1 b1", path: "a2 b2"} {
		data, _ := os.ReadFile(file)
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			got = append(got, strings.TrimRight(l, "."))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s holds %q, want %s", filepath.Base(file), got, want)
		}
	}
}
