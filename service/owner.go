package service

import (
	"context"
	"os"
	"os/user"
	"slices"
	"strings"
)

// An engine may be shared: a remote one often is, by a team. Every
// sandbox carries its owner (LabelOwner, Config.Owner), and a manager
// works on its own user's only: it finds, lists, follows, counts for
// maxRunning and applies the lifecycle policy to those, and prune never
// sees the others. OthersOnEngine shows the rest.
//
// The owner is user@host, the user's name on the machine whose sidecar
// made the sandbox. That is whom a sandbox is of use to: its VNC password,
// its forwards and its approvals are in that user's state on that
// machine, and nowhere else. It is read, not kept: a state directory
// wiped or restored elsewhere does not turn the user's own sandboxes into
// strangers' that prune would never remove, as a random id kept in the
// state would; and it says whose a sandbox is to the people who share the
// engine (docker ps, list --all). It is not a defence: whoever can use
// the engine can set any label, and is root on its machine anyway.
//
// The owner is in the container's name too (OwnedContainerName): two
// users' projects at the same path (/workspaces/app in two dev
// containers) are two sandboxes. A container made before owners has no
// LabelOwner and the name of its project alone (ContainerName): it counts
// as the user's own, as it was made by whoever used the engine then.

// LabelOwner names the user who made a sandbox: user@host.
const LabelOwner = "pilot.owner"

// DefaultOwner is this user's identity as a sandbox's owner: the user's
// name @ the machine's host name.
func DefaultOwner() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	// A Windows user name is DOMAIN\user; a label value takes either.
	return strings.TrimSpace(name) + "@" + strings.TrimSpace(host)
}

// OwnedContainerName is the container name of owner's sandbox for a
// project: ContainerName's form, with the owner in its hash. No owner is
// the name a container had before owners.
func OwnedContainerName(owner, project string) string {
	if owner == "" {
		return ContainerName(project)
	}
	return containerName(project, owner+"\x00"+project)
}

// containerName is the name of this user's sandbox for the project.
func (m *Manager) containerName(project string) string {
	return OwnedContainerName(m.cfg.Owner, project)
}

// projectOf is the project of c if c is one of this user's sandboxes, by
// its labels and name: made by this user, or before owners (then under
// its old name). A copy made by hand under another name is none.
func (m *Manager) projectOf(c Container) (string, bool) {
	project := c.Labels[LabelProject]
	if project == "" {
		return "", false
	}
	switch owner := c.Labels[LabelOwner]; owner {
	case "":
		return project, c.Name == ContainerName(project)
	case m.cfg.Owner:
		return project, c.Name == OwnedContainerName(owner, project)
	}
	return "", false
}

// findLegacy looks for the project's sandbox made before owners, under
// its old name, when the one under the owner's name is not there.
func (m *Manager) findLegacy(ctx context.Context, project string) (Container, error) {
	if m.cfg.Owner == "" {
		return Container{}, ErrContainerNotFound
	}
	c, err := m.docker.InspectContainer(ctx, ContainerName(project))
	if err != nil {
		return c, err
	}
	if p, ok := m.projectOf(c); !ok || p != project || c.Labels[LabelSandbox] != m.cfg.Scope {
		// Another user's, or not a sandbox: not this user's either way.
		return Container{}, ErrContainerNotFound
	}
	return c, nil
}

// Foreign is a sandbox of another user on the engine, as list --all
// shows it: whose, where, and whether it runs. Nothing else of it is
// this user's to know or use.
type Foreign struct {
	Owner         string `json:"owner"`
	ProjectPath   string `json:"projectPath"`
	ContainerName string `json:"containerName"`
	ContainerID   string `json:"containerId"`
	Status        Status `json:"status"`
}

// OthersOnEngine lists the sandboxes of the manager's scope on the engine
// that belong to other users, by owner and project.
func (m *Manager) OthersOnEngine(ctx context.Context) ([]Foreign, error) {
	containers, err := m.docker.ListContainers(ctx, scopeLabels(m.cfg.Scope))
	if err != nil {
		return nil, err
	}
	var out []Foreign
	for _, c := range containers {
		owner := c.Labels[LabelOwner]
		if _, mine := m.projectOf(c); mine || owner == "" {
			continue
		}
		status, _ := statusOf(c, false)
		out = append(out, Foreign{Owner: owner, ProjectPath: c.Labels[LabelProject], ContainerName: c.Name, ContainerID: c.ID, Status: status})
	}
	slices.SortFunc(out, func(a, b Foreign) int {
		return strings.Compare(a.Owner+"\x00"+a.ProjectPath, b.Owner+"\x00"+b.ProjectPath)
	})
	return out, nil
}
