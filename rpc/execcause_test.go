package rpc

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCauseOfACommand: a sandbox/exec's command is its connections' cause
// as it is, and a long one is cut to maxCause bytes, never mid-character.
func TestCauseOfACommand(t *testing.T) {
	if got := causeOf("curl https://example.org"); got != "curl https://example.org" {
		t.Errorf("short: %q", got)
	}
	long := strings.Repeat("é", maxCause) // 2 bytes each
	got := causeOf("x" + long)
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || len(got) > maxCause+len("…") || len(got) < maxCause-4 {
		t.Errorf("long: %d bytes, valid %v, %q...", len(got), utf8.ValidString(got), got[:20])
	}
}
