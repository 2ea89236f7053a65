package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Sandboxes join a bridge network of their own instead of Docker's default
// one, where every container reaches every other: on this one the engine
// drops traffic between containers (enable_icc=false), so a sandbox cannot
// reach another's VNC or noVNC server, while each still reaches the outside
// (the bridge masquerades as the default one does) and its ports published
// on 127.0.0.1 work as before. A port ever published without an address
// binds to 127.0.0.1 too (host_binding_ipv4). Containers made before there
// was such a network stay on the default bridge.
const (
	networkPrefix     = "pilot-sandbox"
	optionICC         = "com.docker.network.bridge.enable_icc"
	optionHostBinding = "com.docker.network.bridge.host_binding_ipv4"
)

// NetworkName is the network of a scope's sandboxes: pilot-sandbox for the
// user's, pilot-sandbox-SCOPE for another scope's (the tests').
func NetworkName(scope string) string {
	if scope == "" || scope == service.DefaultScope {
		return networkPrefix
	}
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, scope)
	return networkPrefix + "-" + clean
}

// ensureNetwork returns the ID of the scope's sandbox network, creating it
// the first time. Docker does not make network names unique: two sidecars
// creating it at once can make two networks of the name. So after a
// creation the networks are listed again, every caller takes the one with
// the lowest ID, and the others are removed (Docker refuses while a running
// container uses one). A caller that listed before a duplicate showed may
// still get one that another removes a moment later: CreateContainer then
// tries once more, and a container made on it joins the survivor when it
// starts (rejoinNetwork).
func (e *Client) ensureNetwork(ctx context.Context, scope string) (string, error) {
	nets, err := e.sandboxNetworks(ctx, scope)
	if err != nil {
		return "", err
	}
	if len(nets) == 0 {
		if err := e.createNetwork(ctx, scope); err != nil {
			return "", err
		}
		if nets, err = e.sandboxNetworks(ctx, scope); err != nil {
			return "", err
		}
	}
	if len(nets) == 0 {
		return "", fmt.Errorf("docker: network %s was removed as it was being created", NetworkName(scope))
	}
	short, err := e.connectShort(ctx)
	if err != nil {
		return "", err
	}
	for _, extra := range nets[1:] {
		short.RemoveNetwork(extra.ID) // best effort: see above
	}
	return nets[0].ID, nil
}

// sandboxNetworks lists the networks named for the scope's sandboxes, by
// ID. A network of that name that the sidecar did not make, or that lets
// containers talk to each other, is an error: joining it would give up the
// isolation.
func (e *Client) sandboxNetworks(ctx context.Context, scope string) ([]docker.Network, error) {
	api, err := e.connectShort(ctx)
	if err != nil {
		return nil, err
	}
	name := NetworkName(scope)
	list, err := api.FilteredListNetworks(docker.NetworkFilterOpts{"name": {name: true}})
	if err != nil {
		return nil, e.classify(err)
	}
	var nets []docker.Network
	for _, n := range list {
		if n.Name != name { // the name filter matches parts of names too
			continue
		}
		if n.Labels[service.LabelSandbox] != scope || n.Options[optionICC] != "false" {
			return nil, fmt.Errorf("docker: a network named %s exists that pilot-sandbox did not make, "+
				"and sandboxes must not join it: remove it (docker network rm %s)", name, name)
		}
		nets = append(nets, n)
	}
	sort.Slice(nets, func(i, j int) bool { return nets[i].ID < nets[j].ID })
	return nets, nil
}

// createNetwork makes the scope's sandbox network; one made meanwhile by
// another sidecar is as good.
func (e *Client) createNetwork(ctx context.Context, scope string) error {
	api, err := e.connect(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err = api.CreateNetwork(docker.CreateNetworkOptions{
		Name:           NetworkName(scope),
		Driver:         "bridge",
		CheckDuplicate: true,
		Options:        map[string]any{optionICC: "false", optionHostBinding: "127.0.0.1"},
		Labels:         map[string]string{service.LabelSandbox: scope},
		Context:        ctx,
	})
	var apiErr *docker.Error
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict {
		return nil
	}
	return e.classify(err)
}

// networkGone says whether the engine refused a container because the
// network it names no longer exists (`docker network prune` removes a
// network that only stopped containers use).
func networkGone(err error) bool {
	var noContainer *docker.NoSuchContainer // what the library makes of a 404 to a start
	if errors.As(err, &noContainer) && noContainer.Err != nil {
		err = noContainer.Err
	}
	var apiErr *docker.Error
	return errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound &&
		strings.HasPrefix(apiErr.Message, "network ") && strings.HasSuffix(apiErr.Message, " not found")
}

// rejoinNetwork moves a stopped sandbox whose network was removed onto the
// scope's current one, keeping everything else about it. It reports false
// for a container that was not on a sandbox network.
func (e *Client) rejoinNetwork(ctx context.Context, api *docker.Client, id string) (bool, error) {
	c, err := api.InspectContainerWithOptions(docker.InspectContainerOptions{ID: id, Context: ctx})
	if err != nil || c.Config == nil || c.NetworkSettings == nil {
		return false, e.classify(err)
	}
	scope := c.Config.Labels[service.LabelSandbox]
	name := NetworkName(scope)
	if _, on := c.NetworkSettings.Networks[name]; scope == "" || !on {
		return false, nil
	}
	netID, err := e.ensureNetwork(ctx, scope)
	if err != nil {
		return false, err
	}
	short, err := e.connectShort(ctx)
	if err != nil {
		return false, err
	}
	// Forced, for a stopped container, this forgets the endpoint of the
	// network that is gone (Docker keys it by the network's name).
	if err := short.DisconnectNetwork(name, docker.NetworkConnectionOptions{Container: id, Force: true}); err != nil {
		return false, e.classify(err)
	}
	err = api.ConnectNetwork(netID, docker.NetworkConnectionOptions{Container: id, Context: ctx})
	return err == nil, e.classify(err)
}
