package service

import (
	"regexp"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/images"
)

func TestStatusOf(t *testing.T) {
	for _, tc := range []struct {
		name     string
		c        Container
		stopping bool
		want     Status
		errPart  string
	}{
		{"running", Container{Running: true, State: "running"}, false, StatusRunning, ""},
		{"paused", Container{Running: true, State: "paused", Name: "x"}, false, StatusPaused, ""},
		{"created, never started", Container{State: "created"}, false, StatusStopped, ""},
		{"clean exit", Container{State: "exited"}, false, StatusStopped, ""},
		{"stopped by SIGTERM", Container{State: "exited", ExitCode: 143}, false, StatusStopped, ""},
		{"desktop crashed", Container{State: "exited", ExitCode: 1}, false, StatusError, "exit code 1"},
		{"killed from outside", Container{State: "exited", ExitCode: 137}, false, StatusError, "killed"},
		{"killed by our own stop", Container{State: "exited", ExitCode: 137}, true, StatusStopped, ""},
		{"out of memory", Container{State: "exited", ExitCode: 137, OOMKilled: true}, false, StatusError, "memory"},
		{"a desktop process out of memory", Container{State: "exited", ExitCode: 1, OOMKilled: true}, false, StatusError, "memory"},
		{"running after a process in it ran out of memory", Container{Running: true, State: "running", OOMKilled: true}, false, StatusRunning, ""},
		{"stopped after a process in it ran out of memory", Container{State: "exited", ExitCode: 143, OOMKilled: true}, false, StatusStopped, ""},
		{"stopped by us after a process in it ran out of memory", Container{State: "exited", ExitCode: 137, OOMKilled: true}, true, StatusStopped, ""},
		{"dead", Container{State: "dead", ExitCode: 2}, false, StatusError, "dead"},
	} {
		got, msg := statusOf(tc.c, tc.stopping)
		if got != tc.want || !strings.Contains(msg, tc.errPart) || (tc.errPart == "" && msg != "") {
			t.Errorf("%s: %s %q, want %s with %q", tc.name, got, msg, tc.want, tc.errPart)
		}
	}
}

func TestContainerNames(t *testing.T) {
	valid := regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)
	seen := map[string]bool{}
	for _, p := range []string{"/", "/home/me/My Project!", "/home/me/my-project", "/srv/日本語", "/a/" + strings.Repeat("x", 300)} {
		name := ContainerName(p)
		if !valid.MatchString(name) || len(name) > 64 || seen[name] {
			t.Errorf("ContainerName(%q) = %q", p, name)
		}
		if ContainerName(p) != name {
			t.Errorf("ContainerName(%q) is not stable", p)
		}
		seen[name] = true
	}
	if got := ContainerName("/home/me/My Project!"); !strings.HasPrefix(got, "pilot-sandbox-my-project-") {
		t.Errorf("name %q does not show the project", got)
	}
}

func TestVariantOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"the desktop image", map[string]string{LabelVariant: images.VariantDesktop}, images.VariantDesktop},
		{"the browser image", map[string]string{LabelVariant: images.VariantBrowser, images.LabelBrowser: "1"}, images.VariantBrowser},
		{"a project's Dockerfile", map[string]string{LabelVariant: images.VariantProject, images.LabelBrowser: "1", images.LabelContext: "sha256:x"}, images.VariantProject},
		// Containers created before the label: their image's labels say.
		{"an older desktop container", nil, images.VariantDesktop},
		{"an older browser container", map[string]string{images.LabelBrowser: "1"}, images.VariantBrowser},
		{"an older project container", map[string]string{images.LabelBrowser: "1", images.LabelContext: "sha256:x"}, images.VariantProject},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stateOf("/p", Container{Labels: tc.labels}, desktop.Secret{}, desktop.Display{}, false).ImageVariant; got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
