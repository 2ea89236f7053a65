package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
)

// TestDoctorWarnsOfAnEngineThatLeaksLoopbackPorts runs doctor on the real
// engine: before Engine 28 it must warn, naming moby #41872; from 28 on it
// must not.
func TestDoctorWarnsOfAnEngineThatLeaksLoopbackPorts(t *testing.T) {
	var v struct{ Version string }
	dockertest.NewAPI(t).GetJSON("/version", &v)
	major, err := strconv.Atoi(strings.SplitN(v.Version, ".", 2)[0])
	if err != nil {
		t.Fatalf("the engine's version %q does not start with a number", v.Version)
	}
	out, _, code := cliRun(t, []string{"XDG_STATE_HOME=" + t.TempDir()}, "", "doctor")
	if code != 0 {
		t.Fatalf("doctor exited %d:\n%s", code, out)
	}
	warning := "WARN Docker Engine " + v.Version + " is older than 28"
	if major >= 28 {
		if strings.Contains(out, "WARN") {
			t.Errorf("doctor warns on Engine %s:\n%s", v.Version, out)
		}
		return
	}
	for _, w := range []string{warning, "answer\n     from other machines on the LAN", "moby #41872", "only the VNC password"} {
		if !strings.Contains(out, w) {
			t.Errorf("doctor on Engine %s does not say %q:\n%s", v.Version, w, out)
		}
	}
}
