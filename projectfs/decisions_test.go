package projectfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

func TestDecisionsAreKeptPerProjectAndBounded(t *testing.T) {
	state := t.TempDir()
	d := projectfs.NewDecisions(state)
	a := "/home/me/a"
	before := d.Stamp(a)
	keep := func(list []projectfs.Decision) ([]projectfs.Decision, error) {
		return append(list, projectfs.Decision{Kind: "network", Rule: "example.org:443", Allow: true, DecidedAt: 1}), nil
	}
	if err := d.Change(a, keep); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Read(a); err != nil || len(got) != 1 || got[0].Rule != "example.org:443" || !got[0].Allow {
		t.Errorf("read %+v, %v", got, err)
	}
	if got, _ := d.Read("/home/me/b"); got != nil {
		t.Errorf("another project sees %+v", got)
	}
	if d.Stamp(a) == before {
		t.Error("the stamp did not change with the file")
	}
	files, _ := filepath.Glob(filepath.Join(state, "decisions", "*.json"))
	data, _ := os.ReadFile(files[0])
	if !strings.HasPrefix(string(data), "{\n  \"project\": \"/home/me/a\",\n  \"decisions\": [") {
		t.Errorf("file:\n%s", data)
	}
	tooMany := func(list []projectfs.Decision) ([]projectfs.Decision, error) {
		return make([]projectfs.Decision, projectfs.MaxDecisions+1), nil
	}
	if err := d.Change(a, tooMany); !errors.Is(err, projectfs.ErrTooManyDecisions) {
		t.Errorf("%d decisions: %v", projectfs.MaxDecisions+1, err)
	}
	if got, _ := d.Read(a); len(got) != 1 {
		t.Errorf("a refused change changed the file: %d decisions", len(got))
	}
	if projectfs.NewDecisions("").Kept() {
		t.Error("decisions kept without a state directory")
	}
}
