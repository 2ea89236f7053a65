package projectfs

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestApprovals(t *testing.T) {
	state := t.TempDir()
	a := NewApprovals(state)
	now := time.Unix(1700000000, 0)
	if a.Approved("/p", "limits", "sha256:1") {
		t.Fatal("approved before anything was recorded")
	}
	if err := a.Approve("/p", Approval{Kind: "limits", Digest: "sha256:1"}, now); err != nil {
		t.Fatal(err)
	}
	if !a.Approved("/p", "limits", "sha256:1") || a.Approved("/p", "limits", "sha256:2") ||
		a.Approved("/p", "dockerfile", "sha256:1") || a.Approved("/q", "limits", "sha256:1") {
		t.Error("approvals are not by project, kind and digest")
	}
	// A new approval of a kind replaces the old one.
	a.Approve("/p", Approval{Kind: "limits", Digest: "sha256:2"}, now)
	if a.Approved("/p", "limits", "sha256:1") || !a.Approved("/p", "limits", "sha256:2") {
		t.Error("the earlier limits approval still stands")
	}
	// The content approved last is kept for the next request's diff, up
	// to MaxKeptContent.
	a.Approve("/p", Approval{Kind: "dockerfile", Digest: "sha256:3", Content: "FROM x\n"}, now)
	if last, ok := a.Last("/p", "dockerfile"); !ok || last.Content != "FROM x\n" || last.Digest != "sha256:3" {
		t.Errorf("last dockerfile approval: %+v %v", last, ok)
	}
	a.Approve("/p", Approval{Kind: "dockerfile", Digest: "sha256:4", Content: strings.Repeat("x", MaxKeptContent)}, now)
	if last, _ := a.Last("/p", "dockerfile"); last.Digest != "sha256:4" || last.Content != "" {
		t.Errorf("content past the bound: kept %d bytes", len(last.Content))
	}
	if _, ok := a.Last("/p", "network"); ok {
		t.Error("a kind never approved has a last approval")
	}
	info, err := os.Stat(a.Path("/p"))
	if err != nil || info.Mode().Perm() != 0o600 || !strings.HasPrefix(a.Path("/p"), filepath.Join(state, "approvals")) {
		t.Errorf("kept at %s: %v %v", a.Path("/p"), info, err)
	}
	// A file that names another project, or is not JSON, approves nothing.
	os.WriteFile(a.Path("/p"), []byte(`{"project": "/other", "approved": [{"kind": "limits", "digest": "sha256:2"}]}`), 0o600)
	if a.Approved("/p", "limits", "sha256:2") {
		t.Error("a file of another project approved")
	}
	if err := NewApprovals("").Approve("/p", Approval{Kind: "limits", Digest: "x"}, now); err != ErrNoState {
		t.Errorf("without a state directory: %v", err)
	}
}

// Approvals of two kinds at once both stand.
func TestApprovalsConcurrent(t *testing.T) {
	a := NewApprovals(t.TempDir())
	for range 20 {
		var wg sync.WaitGroup
		for _, kind := range []string{"limits", "dockerfile"} {
			wg.Go(func() { a.Approve("/p", Approval{Kind: kind, Digest: "d"}, time.Now()) })
		}
		wg.Wait()
		if !a.Approved("/p", "limits", "d") || !a.Approved("/p", "dockerfile", "d") {
			t.Fatal("one of two concurrent approvals was lost")
		}
		os.Remove(a.Path("/p"))
	}
}
