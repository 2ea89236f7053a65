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

// TestDoctorShowsTheImageAge builds the image (at once if it is built) and
// runs doctor under two policies: it tells the image's age and whether it
// will be rebuilt for security updates.
func TestDoctorShowsTheImageAge(t *testing.T) {
	dockertest.Engine(t)
	state := "XDG_STATE_HOME=" + t.TempDir()
	if out, errOut, code := cliRun(t, []string{state}, "", "build"); code != 0 {
		t.Fatalf("build: %d %s %s", code, out, errOut)
	}
	dir := t.TempDir()
	for _, tc := range []struct{ config, want string }{
		{`{"rebuildAfter": "168h"}`, "ok   the sandbox image was built * ago; it is rebuilt for security updates once 168h old\n"},
		{`{"rebuildAfter": "0"}`, "note the sandbox image was built * ago; rebuildAfter is 0, so it is never rebuilt"},
	} {
		home := writeConfig(dir, strings.NewReplacer(`"`, "", "{", "", "}", "", ":", "", " ", "").Replace(tc.config), tc.config)
		out, _, _ := cliRun(t, []string{state, "XDG_CONFIG_HOME=" + home}, "", "doctor")
		before, after, _ := strings.Cut(tc.want, "*")
		if line := lineOf(out, before); line == "" || !strings.Contains(out, after) || !strings.Contains(line, after[:10]) {
			t.Errorf("with %s doctor does not say %q:\n%s", tc.config, tc.want, out)
		}
	}
}
