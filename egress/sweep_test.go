package egress_test

import (
	"cmp"
	"crypto/rand"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/egress"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/testlog"
)

// TestHelpersLeftBehindAreSwept: the helpers of the enforcer's scope that
// are not running (created and never started, as a process that ended
// between the create and the start leaves one, or exited) are removed
// once older than the sweep's age; a running one, one younger than the
// age, and another scope's stay.
func TestHelpersLeftBehindAreSwept(t *testing.T) {
	_, docker := dockertest.Manager(t, nil)
	image := cmp.Or(os.Getenv("PILOT_IMAGE"), images.DefaultTag)
	scope := "test-sweep-" + strings.ToLower(rand.Text()[:8])
	other := scope + "-other"
	t.Cleanup(func() {
		dockertest.RemoveScope(t, docker, scope)
		dockertest.RemoveScope(t, docker, other)
	})
	created := createHelper(t, image, scope, "true")
	exited := createHelper(t, image, scope, "true")
	running := createHelper(t, image, scope, "sleep", "600")
	others := createHelper(t, image, other, "true")
	dockerCLI(t, "start", "--attach", exited) // returns once it exited
	dockerCLI(t, "start", running)

	e := egress.New(docker, egress.Config{Image: image, Scope: scope, Logger: testlog.New(t)})
	if n := egress.Sweep(e, time.Minute); n != 0 {
		t.Errorf("a sweep of the helpers older than a minute removed %d made just now", n)
	}
	if n := egress.Sweep(e, -time.Second); n != 2 {
		t.Errorf("the sweep removed %d helpers, want 2: the created and the exited one", n)
	}
	for id, want := range map[string]bool{created: false, exited: false, running: true, others: true} {
		err := exec.Command("docker", "inspect", id).Run()
		if got := err == nil; got != want {
			t.Errorf("helper %.12s is there: %v, want %v", id, got, want)
		}
	}
}

// createHelper creates (and does not start) a container labelled as a
// network helper of scope, running cmd.
func createHelper(t *testing.T, image, scope string, cmd ...string) string {
	t.Helper()
	args := []string{"create", "--label", egress.LabelHelper + "=" + scope, "--label", egress.LabelHelperOf + "=gone",
		"--network", "none", "--entrypoint", cmd[0], image}
	return dockerCLI(t, append(args, cmd[1:]...)...)
}

func dockerCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
