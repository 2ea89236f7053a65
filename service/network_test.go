package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// networkHarness is a manager whose user config.json is config (none if
// empty).
func networkHarness(t *testing.T, config string) *harness {
	file := ""
	if config != "" {
		file = filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return newHarness(t, func(c *Config) { c.Policy.File = file })
}

// A network policy that cannot be used fails the start, naming its key,
// before anything is made; the lifecycle's keys keep their defaults as
// before. With no network asked, it does not matter.
func TestAWrongNetworkPolicyFailsTheStart(t *testing.T) {
	h := networkHarness(t, `{"maxRunning": 3, "network": {"allow": ["example.org", "a..b"], "preset": "wide"}}`)
	dir := project(t)
	_, err := h.m.Start(context.Background(), dir)
	var ce *projectfs.ConfigError
	if !errors.As(err, &ce) || ce.Field != "network.allow" || !strings.HasSuffix(ce.File, "config.json") ||
		!strings.Contains(ce.Reason, `entry 2: "a..b" has an empty label`) || !strings.Contains(ce.Reason, "network.preset must be") {
		t.Fatalf("start: %v, want a ConfigError naming network.allow and network.preset", err)
	}
	if len(h.docker.specs) != 0 {
		t.Errorf("%d containers made", len(h.docker.specs))
	}
	if st, _ := h.m.Status(context.Background(), dir); st != nil {
		t.Errorf("state %+v after a refused start", st)
	}
	writeSettings(t, dir, `{"sandbox": {"network": "none"}}`)
	if _, err := h.m.UserNetwork(); err == nil {
		t.Error("UserNetwork took the wrong policy")
	}
	if _, _, err := h.m.RepositoryNetwork(dir); err == nil {
		t.Error("RepositoryNetwork judged a widening against a wrong policy")
	}
}

// A repository may narrow the user's policy without asking; what it asks
// beyond it is approved first (kind network, with its rules as content),
// and a change of it asks again.
func TestARepositorysWiderNetworkNeedsApproval(t *testing.T) {
	ctx := context.Background()
	h := networkHarness(t, `{"network": {"preset": "dev"}}`)
	dir := project(t)
	writeSettings(t, dir, `{"sandbox": {"network": {"preset": "locked", "deny": ["tracker.example"]}}}`)
	if _, err := h.m.Start(ctx, dir); err != nil {
		t.Fatalf("a narrowing policy: %v", err)
	}
	if repo, approved, err := h.m.RepositoryNetwork(dir); err != nil || !approved || repo.Preset != "locked" || len(repo.Deny) != 1 {
		t.Errorf("RepositoryNetwork = %+v, %v, %v", repo, approved, err)
	}
	h.m.Stop(ctx, dir)

	writeSettings(t, dir, `{"sandbox": {"network": {"preset": "open", "allow": ["api.example.com:443"], "deny": ["x.example"]}}}`)
	_, err := h.m.Start(ctx, dir)
	var ae *ApprovalError
	if !errors.As(err, &ae) || ae.Approval.Kind != ApprovalNetwork {
		t.Fatalf("a wider policy: %v, want a network approval", err)
	}
	a := ae.Approval
	if a.Content != "preset open (yours is dev)\nallow api.example.com:443\n" || !strings.HasPrefix(a.Summary, "let its sandbox reach any destination not denied") {
		t.Errorf("approval = %+v", a)
	}
	if pending, _ := h.m.Pending(ctx, dir); len(pending) != 1 || pending[0].Digest != a.Digest {
		t.Errorf("pending = %+v", pending)
	}
	if _, approved, _ := h.m.RepositoryNetwork(dir); approved {
		t.Error("approved before the approval")
	}
	if err := h.m.Approve(ctx, dir, a.Digest); err != nil {
		t.Fatal(err)
	}
	assertStateOnly(t, h.m, dir)
	if _, err := h.m.Start(ctx, dir); err != nil {
		t.Fatalf("after the approval: %v", err)
	}
	if _, approved, _ := h.m.RepositoryNetwork(dir); !approved {
		t.Error("not approved after the approval")
	}
	h.m.Stop(ctx, dir)
	writeSettings(t, dir, `{"sandbox": {"network": {"preset": "open", "allow": ["api.example.com"]}}}`)
	if _, err := h.m.Start(ctx, dir); !errors.As(err, &ae) || !strings.Contains(ae.Approval.Content, "allow api.example.com\n") {
		t.Errorf("a changed rule: %v, want it asked", err)
	}
}
