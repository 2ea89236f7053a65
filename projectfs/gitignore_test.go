package projectfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPilotGitignoreKeepsLocalStateOut: the first record written gives
// .pilot a .gitignore under which git ignores the machine's state and
// keeps the project's files; one that is there is never replaced.
func TestPilotGitignoreKeepsLocalStateOut(t *testing.T) {
	project := t.TempDir()
	if _, err := WriteRecord(project, Record{ContainerID: "c", Status: "running"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(project, Dir, gitignoreName)
	if data, err := os.ReadFile(file); err != nil || string(data) != gitignore {
		t.Fatalf(".pilot/.gitignore: %q, %v", data, err)
	}
	if _, err := exec.LookPath("git"); err == nil {
		git := func(args ...string) (string, error) {
			cmd := exec.Command("git", args...)
			cmd.Dir = project
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		if out, err := git("init", "-q"); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
		local := []string{".pilot/sandbox.json", ".pilot/.sandbox.json.tmp-x1", ".pilot/.settings.json.tmp-x2", ".pilot/settings.json.corrupt-20260101T000000.000Z"}
		kept := []string{".pilot/settings.json", ".pilot/Dockerfile", ".pilot/.gitignore", ".pilot/sub/sandbox.json"}
		for _, p := range local {
			if out, err := git("check-ignore", "-q", p); err != nil {
				t.Errorf("git does not ignore %s: %v %s", p, err, out)
			}
		}
		for _, p := range kept {
			if _, err := git("check-ignore", "-q", p); err == nil {
				t.Errorf("git ignores %s, which is the project's", p)
			}
		}
	}
	os.WriteFile(file, []byte("# mine\n"), 0o644)
	if _, err := WriteRecord(project, Record{ContainerID: "c", Status: "stopped"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(file); !strings.HasPrefix(string(data), "# mine") {
		t.Errorf("the user's .gitignore became %q", data)
	}
}
