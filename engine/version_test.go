package engine

import "testing"

func TestLoopbackLeaksBeforeEngine28(t *testing.T) {
	for _, tc := range []struct {
		version      string
		leaks, known bool
	}{
		{"20.10.24+dfsg1", true, true},
		{"27.5.1", true, true},
		{"1.13.1", true, true},
		{"9.0.0", true, true},
		{"28.0.0", false, true},
		{"28.0.0-rc.1", false, true},
		{"v28.3.2", false, true},
		{"100.1", false, true},
		{" 29.1.0 ", false, true},
		{"", false, false},
		{"dev", false, false},
		{"master-dockerproject-2025-01-01", false, false},
		{"v", false, false},
	} {
		leaks, known := LoopbackLeaks(tc.version)
		if leaks != tc.leaks || known != tc.known {
			t.Errorf("LoopbackLeaks(%q) = %v, %v; want %v, %v", tc.version, leaks, known, tc.leaks, tc.known)
		}
	}
}
