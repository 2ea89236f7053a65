package engine_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/engine"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// networksOf names the networks a container is on.
func networksOf(t *testing.T, api *dockertest.API, id string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, n := range inspectRaw(t, api, id).NetworkSettings.Networks {
		out[name] = n.NetworkID
	}
	return out
}

// TestSandboxRejoinsARemovedNetwork: `docker network prune` removes the
// sandboxes' network while only stopped sandboxes use it, and Docker then
// refuses to start them ("network ... not found"). The next start puts
// the sandbox on the network made anew.
func TestSandboxRejoinsARemovedNetwork(t *testing.T) {
	scope := "test-net-" + randomHex(t) // a network of its own, to remove
	api := dockertest.NewAPI(t)
	name := engine.NetworkName(scope)
	removeNetworksNamed(t, api, name)
	m, docker := dockertest.Manager(t, func(c *service.Config) { c.Scope = scope })
	dir := dockertest.Project(t, docker)
	ctx := context.Background()
	st, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Stop(ctx, dir); err != nil {
		t.Fatal(err)
	}
	before := networksOf(t, api, st.ContainerID)[name]
	if before == "" {
		t.Fatalf("the sandbox is not on %s: %v", name, networksOf(t, api, st.ContainerID))
	}
	api.Delete("/networks/" + before)

	again, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatalf("start after the network was removed: %v", err)
	}
	after := networksOf(t, api, again.ContainerID)
	if again.ContainerID != st.ContainerID || len(after) != 1 || after[name] == "" || after[name] == before {
		t.Errorf("container %s on %v, want %s on a new %s", again.ContainerID, after, st.ContainerID, name)
	}
}

// TestSandboxFromBeforeTheNetworkStarts: a sandbox made before sandboxes had
// a network of their own is on Docker's default bridge, with Docker's
// default log. A start adopts it as it is.
func TestSandboxFromBeforeTheNetworkStarts(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	api := dockertest.NewAPI(t)
	dir := dockertest.Project(t, docker)
	ctx := context.Background()
	st, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Stop(ctx, dir); err != nil {
		t.Fatal(err)
	}
	// Make it again as the sidecar used to make it.
	raw := inspectRaw(t, api, st.ContainerID)
	if err := docker.RemoveContainer(ctx, st.ContainerID); err != nil {
		t.Fatal(err)
	}
	raw.HostConfig["NetworkMode"] = "default"
	raw.HostConfig["LogConfig"] = map[string]any{"Type": "json-file", "Config": map[string]string{}}
	body := raw.Config
	body["HostConfig"] = raw.HostConfig
	var old struct {
		ID string `json:"Id"`
	}
	api.PostJSON("/containers/create?name="+url.QueryEscape(strings.TrimPrefix(raw.Name, "/")), body, &old)

	again, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatalf("start of a sandbox on the default bridge: %v", err)
	}
	nets := networksOf(t, api, again.ContainerID)
	if again.ContainerID != old.ID || len(nets) != 1 || nets["bridge"] == "" {
		t.Errorf("container %s on %v, want %s on the default bridge", again.ContainerID, nets, old.ID)
	}
}
