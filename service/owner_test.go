package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/images"
)

const (
	alice = "alice@laptop"
	bob   = "bob@desk"
)

// addOwned puts owner's sandbox for project on the fake engine, as
// owner's sidecar would have made it.
func (f *fakeDocker) addOwned(owner, project string, running bool) *Container {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	c := &Container{
		ID: fmt.Sprintf("%064x", f.nextID), Name: OwnedContainerName(owner, project), Image: images.DefaultTag,
		Labels: projectLabels(DefaultScope, owner, project), State: "exited", CreatedAt: f.now, Ports: map[int]int{},
	}
	if running {
		c.Running, c.State = true, "running"
		c.Ports = map[int]int{desktop.VNCPort: f.nextPort, desktop.NoVNCPort: f.nextPort + 1}
		f.nextPort += 2
	}
	f.containers[c.ID] = c
	return c
}

func TestOwnedContainerNames(t *testing.T) {
	p := "/workspaces/app"
	a, b := OwnedContainerName(alice, p), OwnedContainerName(bob, p)
	if a == b || a == ContainerName(p) || !strings.HasPrefix(a, "pilot-sandbox-app-") || len(a) != len(ContainerName(p)) {
		t.Errorf("alice %q, bob %q, without owner %q: want three names of one form", a, b, ContainerName(p))
	}
	if OwnedContainerName("", p) != ContainerName(p) {
		t.Errorf("no owner is the name before owners")
	}
}

// A manager makes its sandboxes with its owner's label and name.
func TestASandboxCarriesItsOwner(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Owner = alice })
	dir := project(t)
	st, err := h.m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	c := h.docker.lookup(st.ContainerID)
	if c.Labels[LabelOwner] != alice || c.Name != OwnedContainerName(alice, dir) || st.ContainerName != c.Name {
		t.Errorf("container %s labelled %v", c.Name, c.Labels)
	}
}

// On a shared engine another user's sandboxes are not the manager's:
// not listed (list --all shows them apart), not pruned, not counted for
// maxRunning, never stopped by the policy, not removable by ID, and one
// for the same project path is another sandbox.
func TestAnotherUsersSandboxesAreLeftAlone(t *testing.T) {
	p := newPolicyHarness(t, `{"idleStop": "2s", "maxRunning": 1}`, func(c *Config) { c.Owner = alice })
	p.run()
	mine, gone := project(t), project(t)
	os.Remove(gone) // bob's project is no directory here
	sameRunning := p.docker.addOwned(bob, mine, true)
	goneStopped := p.docker.addOwned(bob, gone, false)

	states, err := p.m.List(context.Background())
	if err != nil || len(states) != 0 {
		t.Fatalf("list: %+v, %v; want none of bob's", states, err)
	}
	others, err := p.m.OthersOnEngine(context.Background())
	if err != nil || len(others) != 2 || others[0].Owner != bob || others[1].Owner != bob {
		t.Fatalf("others: %+v, %v", others, err)
	}
	if orphans, err := p.m.Orphans(context.Background()); err != nil || len(orphans) != 0 {
		t.Errorf("orphans: %+v, %v; bob's are not for alice to prune", orphans, err)
	}
	// Bob's running sandbox does not count against alice's maxRunning 1,
	// and alice's sandbox for the same path is a container of her own.
	st := p.start(t, mine)
	if st.ContainerID == sameRunning.ID || st.ContainerName == sameRunning.Name {
		t.Fatalf("alice's start took bob's sandbox: %+v", st)
	}
	p.clock.advance(3 * time.Second)
	p.round()
	if p.status(t, mine).Status != StatusStopped || !p.docker.lookup(sameRunning.ID).Running {
		t.Errorf("the idle round: alice's %s, bob's running %v; want alice's stopped, bob's untouched",
			p.status(t, mine).Status, p.docker.lookup(sameRunning.ID).Running)
	}
	_, err = p.m.RemoveContainer(context.Background(), goneStopped.ID)
	var ae *ArgumentError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), bob) || p.docker.lookup(goneStopped.ID) == nil {
		t.Errorf("remove of bob's by its ID: %v", err)
	}
}

// A container made before owners (no label, its project's name alone) is
// the user's own: found, started, counted and removed as before.
func TestASandboxMadeBeforeOwnersIsTheUsers(t *testing.T) {
	p := newPolicyHarness(t, `{"maxRunning": 1}`, func(c *Config) { c.Owner = alice })
	old, other := project(t), project(t)
	legacy := p.docker.addContainer(old, true, 0, desktop.Secret{Control: "ctrl1234", View: "view1234"})

	states, err := p.m.List(context.Background())
	if err != nil || len(states) != 1 || states[0].ContainerID != legacy.ID || states[0].Status != StatusRunning {
		t.Fatalf("list: %+v, %v; want the old sandbox, running", states, err)
	}
	if st := p.start(t, old); st.ContainerID != legacy.ID || p.docker.count("CreateContainer") != 0 {
		t.Errorf("start made a new container beside the old one: %+v", st)
	}
	if _, err := p.m.Start(context.Background(), other); !errors.Is(err, ErrTooManySandboxes) {
		t.Errorf("the old sandbox does not count for maxRunning: %v", err)
	}
	if removed, err := p.m.Remove(context.Background(), old); err != nil || !removed || p.docker.lookup(legacy.ID) != nil {
		t.Errorf("remove: %v, %v", removed, err)
	}
}

// On a remote engine a new sandbox publishes nothing, its desktop is
// carried, and its relays get no direct route to the container's address,
// which is the engine's machine's.
func TestARemoteEnginesSandboxIsCarried(t *testing.T) {
	for _, remote := range []bool{false, true} {
		relay := &fakeDesktopPorts{}
		h := newHarness(t, func(c *Config) { c.Remote, c.DesktopPorts = remote, relay })
		h.docker.onStart = func(c *Container) { c.IP = "10.9.8.7" }
		dir := project(t)
		st, err := h.m.Start(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		target, err := h.m.RelayTarget(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		published := h.docker.specs[st.ContainerID].Ports
		switch carried := st.WSPort == 40000+desktop.NoVNCPort; {
		case remote && (len(published) != 0 || !st.Carried || !carried || target.Address.IsValid()):
			t.Errorf("remote: published %v, state %+v, relay target %+v; want nothing published, the desktop carried, no address", published, st, target)
		case !remote && (len(published) != 2 || st.Carried || carried || target.Address.String() != "10.9.8.7"):
			t.Errorf("local: published %v, state %+v, relay target %+v", published, st, target)
		}
	}
}
