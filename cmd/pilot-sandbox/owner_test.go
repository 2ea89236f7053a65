package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// TestListAllAndPruneOnASharedEngine: on an engine with another user's
// sandbox and one made before owners, list shows the user's own (the old
// one counts), list --all adds the other's with its owner, prune removes
// the user's orphan only, and remove --container refuses the other's.
func TestListAllAndPruneOnASharedEngine(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	ctx := context.Background()
	if err := m.EnsureImage(ctx, ""); err != nil {
		t.Fatal(err)
	}
	// A scope of the test's own: prune must see these containers only.
	scope := "test-owner-" + strings.ToLower(rand.Text()[:8])
	gone := filepath.Join(t.TempDir(), "gone")
	create := func(name, owner string) string {
		labels := map[string]string{service.LabelSandbox: scope, service.LabelProject: gone}
		if owner != "" {
			labels[service.LabelOwner] = owner
		}
		id, err := docker.CreateContainer(ctx, service.ContainerSpec{Name: name, Image: m.Image(), Labels: labels, NoNetwork: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { docker.RemoveContainer(context.Background(), id) })
		return id
	}
	const other = "someone@elsewhere"
	theirs := create(service.OwnedContainerName(other, gone), other)
	old := create(service.ContainerName(gone), "")
	env := []string{"PILOT_SCOPE=" + scope, "XDG_STATE_HOME=" + t.TempDir()}

	out, errOut, code := cliRun(t, env, "", "list", "--all", "--json")
	var listed struct {
		Sandboxes []struct {
			ContainerID string `json:"containerId"`
			ProjectGone bool   `json:"projectGone"`
		} `json:"sandboxes"`
		Others []service.Foreign `json:"others"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil ||
		len(listed.Sandboxes) != 1 || listed.Sandboxes[0].ContainerID != old || !listed.Sandboxes[0].ProjectGone ||
		len(listed.Others) != 1 || listed.Others[0].ContainerID != theirs || listed.Others[0].Owner != other {
		t.Fatalf("list --all --json (%d): %s %s", code, out, errOut)
	}
	if out, _, _ := cliRun(t, env, "", "list"); strings.Contains(out, other) {
		t.Errorf("list without --all shows the other user's: %s", out)
	}
	if out, errOut, code := cliRun(t, env, "", "remove", "--container", theirs); code == 0 || !strings.Contains(out+errOut, other) {
		t.Errorf("remove --container of the other's (%d): %s %s", code, out, errOut)
	}
	if out, errOut, code := cliRun(t, env, "", "prune", "--yes"); code != 0 || strings.Contains(out, other) {
		t.Errorf("prune (%d): %s %s", code, out, errOut)
	}
	if _, err := docker.InspectContainer(ctx, old); err == nil {
		t.Error("prune left the user's own orphan, made before owners")
	}
	if _, err := docker.InspectContainer(ctx, theirs); err != nil {
		t.Errorf("prune removed the other user's sandbox: %v", err)
	}
}
