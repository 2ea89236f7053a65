package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// callTimeout bounds one plain API call (not builds, stops or execs, which
// have their own bounds), so a wedged engine fails a call instead of hanging it.
const callTimeout = 30 * time.Second

// ImageLabels returns the labels of an image.
func (e *Client) ImageLabels(ctx context.Context, ref string) (map[string]string, error) {
	api, err := e.connectShort(ctx)
	if err != nil {
		return nil, err
	}
	img, err := api.InspectImage(ref)
	if err != nil {
		return nil, e.classify(err)
	}
	if img.Config == nil {
		return map[string]string{}, nil
	}
	return img.Config.Labels, nil
}

// CreateContainer creates a sandbox container: the ports published on
// spec.HostIP only, with host ports the engine chooses, on the sandboxes'
// own network (made now if there is none), an init process that reaps the
// agent's orphans, a capped log, and spec's limits (its disk bound only
// where the storage driver takes one).
func (e *Client) CreateContainer(ctx context.Context, spec service.ContainerSpec) (string, error) {
	api, err := e.connect(ctx)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		netID, err := e.sandboxNetwork(ctx, spec)
		if err != nil {
			return "", err
		}
		host := hostConfig(spec, netID)
		host.StorageOpt = e.storageOpt(ctx, spec.DiskBytes)
		c, err := api.CreateContainer(docker.CreateContainerOptions{
			Name:       spec.Name,
			Config:     containerConfig(spec),
			HostConfig: host,
			Context:    ctx,
		})
		if networkGone(err) && attempt == 1 {
			continue // another sidecar removed it as a duplicate of its own
		}
		if host.StorageOpt != nil && sizeRefused(err) {
			// The driver cannot bound the layer here after all: the
			// disk policy measures it instead, from now on.
			e.setDiskLimit(false, "the engine refused a size bound: "+err.Error())
			continue
		}
		if err != nil {
			return "", e.classify(err)
		}
		return c.ID, nil
	}
}

// sandboxNetwork is the network mode of spec's container: "none" for a
// sandbox without a network, else the scope's sandbox network.
func (e *Client) sandboxNetwork(ctx context.Context, spec service.ContainerSpec) (string, error) {
	if spec.NoNetwork {
		return networkNone, nil
	}
	netID, err := e.ensureNetwork(ctx, spec.Labels[service.LabelSandbox])
	if err != nil {
		return "", fmt.Errorf("the sandboxes' network: %w", err)
	}
	return netID, nil
}

// networkNone is Docker's network mode of a container with only its
// loopback; the engine refuses to publish its ports.
const networkNone = "none"

func containerConfig(spec service.ContainerSpec) *docker.Config {
	exposed := map[docker.Port]struct{}{}
	for _, p := range spec.Ports {
		exposed[tcpPort(p)] = struct{}{}
	}
	return &docker.Config{
		Image:        spec.Image,
		Labels:       spec.Labels,
		Env:          spec.Env,
		ExposedPorts: exposed,
		User:         spec.User,
		Entrypoint:   spec.Entrypoint,
	}
}

// The container's log is capped: whatever the sandbox writes to its
// stdout or stderr (anything in it can, through /proc/1/fd/1) is kept by
// the engine on the host's disk, and Docker's default keeps all of it.
// json-file with max-size and max-file keeps at most logMaxFiles files of
// logMaxSize each. It is chosen over the local driver because every engine
// has it and it is Docker's default, so the sidecar's Logs and `docker
// logs` read it as before, and its file is plain, so its size can be seen
// (the local driver's compression saves little on a few megabytes).
const (
	logMaxSize  = "5m"
	logMaxFiles = "2"
)

func hostConfig(spec service.ContainerSpec, network string) *docker.HostConfig {
	bindings := map[docker.Port][]docker.PortBinding{}
	for _, p := range spec.Ports {
		if spec.NoNetwork {
			break // the engine publishes no port of such a container
		}
		// An empty HostPort lets the engine choose a free one.
		bindings[tcpPort(p)] = []docker.PortBinding{{HostIP: spec.HostIP}}
	}
	security := []string{"no-new-privileges"}
	if spec.Seccomp != "" {
		security = append(security, "seccomp="+spec.Seccomp)
	}
	return &docker.HostConfig{
		PortBindings: bindings,
		NetworkMode:  network,
		LogConfig: docker.LogConfig{
			Type:   "json-file",
			Config: map[string]string{"max-size": logMaxSize, "max-file": logMaxFiles},
		},
		Init:        true,
		CapDrop:     []string{"ALL"},
		SecurityOpt: security,
		Memory:      spec.Limits.MemoryBytes,
		MemorySwap:  spec.Limits.MemoryBytes, // no swap beyond the memory limit
		NanoCPUs:    spec.Limits.NanoCPUs,
		PidsLimit:   ptrIfPositive(spec.Limits.PidsLimit),
		ShmSize:     spec.Limits.ShmBytes,
	}
}

func ptrIfPositive(v int64) *int64 {
	if v <= 0 {
		return nil
	}
	return &v
}

func tcpPort(p int) docker.Port { return docker.Port(strconv.Itoa(p) + "/tcp") }

// RemoveImage removes an image tag, and the layers only it used.
func (e *Client) RemoveImage(ctx context.Context, ref string) error {
	api, err := e.connect(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return e.classify(api.RemoveImageExtended(ref, docker.RemoveImageOptions{Context: ctx}))
}

// ImageTags lists the tags of the images labelled label=value.
func (e *Client) ImageTags(ctx context.Context, label, value string) ([]string, error) {
	api, err := e.connect(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	list, err := api.ListImages(docker.ListImagesOptions{Filters: map[string][]string{"label": {label + "=" + value}}, Context: ctx})
	if err != nil {
		return nil, e.classify(err)
	}
	var tags []string
	for _, img := range list {
		for _, t := range img.RepoTags {
			if t != "<none>:<none>" {
				tags = append(tags, t)
			}
		}
	}
	return tags, nil
}

// CopyTo extracts a tar archive into dir in the container.
func (e *Client) CopyTo(ctx context.Context, id, dir string, archive io.Reader) error {
	api, err := e.connect(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return e.classify(api.UploadToContainer(id, docker.UploadToContainerOptions{
		InputStream: archive,
		Path:        dir,
		Context:     ctx,
	}))
}

// StartContainer starts a created or stopped container. A sandbox whose
// network was removed while it was stopped joins the current one first.
func (e *Client) StartContainer(ctx context.Context, id string) error {
	api, err := e.connect(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	err = api.StartContainerWithContext(id, nil, ctx)
	if networkGone(err) {
		moved, rerr := e.rejoinNetwork(ctx, api, id)
		if rerr != nil {
			return fmt.Errorf("docker: %v; rejoining the sandboxes' network: %w", err, rerr)
		}
		if moved {
			err = api.StartContainerWithContext(id, nil, ctx)
		}
	}
	if _, already := err.(*docker.ContainerAlreadyRunning); already {
		return nil
	}
	if portTaken(err) {
		return fmt.Errorf("%w: %v", service.ErrPortInUse, err)
	}
	return e.classify(err)
}

// portTaken says whether a failed start is the engine failing to publish a
// port that something else holds. Docker retries ten ports itself before it
// gives up with "driver failed programming external connectivity ...:
// listen tcp4 127.0.0.1:N: bind: address already in use" (or "port is
// already allocated" when its own allocator has it); nothing but the text
// tells this apart from other failures.
func portTaken(err error) bool {
	apiErr, ok := err.(*docker.Error)
	if !ok {
		return false
	}
	return strings.Contains(apiErr.Message, "address already in use") || strings.Contains(apiErr.Message, "port is already allocated")
}

// StopContainer stops a container; one that is not running is not an error.
func (e *Client) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	api, err := e.connect(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, grace+callTimeout)
	defer cancel()
	err = api.StopContainerWithContext(id, uint(grace.Round(time.Second)/time.Second), ctx)
	if _, notRunning := err.(*docker.ContainerNotRunning); notRunning {
		return nil
	}
	return e.classify(err)
}

// RemoveContainer force-removes a container with its anonymous volumes.
func (e *Client) RemoveContainer(ctx context.Context, id string) error {
	api, err := e.connect(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return e.classify(api.RemoveContainer(docker.RemoveContainerOptions{
		ID: id, Force: true, RemoveVolumes: true, Context: ctx,
	}))
}

// InspectContainer looks a container up by ID or name.
func (e *Client) InspectContainer(ctx context.Context, idOrName string) (service.Container, error) {
	api, err := e.connect(ctx)
	if err != nil {
		return service.Container{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	c, err := api.InspectContainerWithOptions(docker.InspectContainerOptions{ID: idOrName, Context: ctx})
	if err != nil {
		return service.Container{}, e.classify(err)
	}
	return containerOf(c), nil
}

func containerOf(c *docker.Container) service.Container {
	out := service.Container{
		ID:         c.ID,
		Name:       strings.TrimPrefix(c.Name, "/"),
		Running:    c.State.Running,
		State:      c.State.StateString(),
		ExitCode:   c.State.ExitCode,
		OOMKilled:  c.State.OOMKilled,
		Error:      c.State.Error,
		CreatedAt:  c.Created,
		StartedAt:  c.State.StartedAt,
		FinishedAt: c.State.FinishedAt,
		Ports:      map[int]int{},
		HostIPs:    map[int]string{},
	}
	if h := c.HostConfig; h != nil {
		out.Limits = service.Limits{MemoryBytes: h.Memory, NanoCPUs: h.NanoCPUs, ShmBytes: h.ShmSize}
		out.NoNetwork = h.NetworkMode == networkNone
		if h.PidsLimit != nil {
			out.Limits.PidsLimit = *h.PidsLimit
		}
	}
	if c.Config != nil {
		out.Image = c.Config.Image
		out.Labels = c.Config.Labels
		out.Env = c.Config.Env
	}
	if c.NetworkSettings != nil {
		out.IP = containerIP(c.NetworkSettings)
		for port, bindings := range c.NetworkSettings.Ports {
			if port.Proto() != "tcp" || len(bindings) == 0 {
				continue
			}
			cport, err1 := strconv.Atoi(port.Port())
			hport, err2 := strconv.Atoi(bindings[0].HostPort)
			if err1 == nil && err2 == nil && hport > 0 {
				out.Ports[cport] = hport
				out.HostIPs[cport] = bindings[0].HostIP
			}
		}
	}
	return out
}

// containerIP is the container's address on its network: on the default
// bridge the engine reports it at the top; on a network of its own
// (engine/network.go) under that network, the first by name should there
// be several.
func containerIP(n *docker.NetworkSettings) string {
	if n.IPAddress != "" {
		return n.IPAddress
	}
	for _, name := range slices.Sorted(maps.Keys(n.Networks)) {
		if ip := n.Networks[name].IPAddress; ip != "" {
			return ip
		}
	}
	return ""
}

// Logs returns the last lines of the container's stdout and stderr.
func (e *Client) Logs(ctx context.Context, id string, lines int) ([]string, error) {
	api, err := e.connect(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var buf bytes.Buffer
	err = api.Logs(docker.LogsOptions{
		Context:      ctx,
		Container:    id,
		OutputStream: &buf,
		ErrorStream:  &buf,
		Stdout:       true,
		Stderr:       true,
		Tail:         fmt.Sprint(lines),
	})
	if err != nil {
		return nil, e.classify(err)
	}
	text := strings.TrimRight(buf.String(), "\n")
	if text == "" {
		return nil, nil
	}
	return strings.Split(text, "\n"), nil
}
