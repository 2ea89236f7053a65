// Package engine implements service.Docker on a real Docker Engine through
// github.com/fsouza/go-dockerclient. It is the only package that knows the
// library's types; everything above it sees the service package's. It
// also says what an engine's version means for the sandboxes' published
// ports (LoopbackLeaks).
package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Client talks to one Docker engine. It connects lazily and pins its API
// version to the daemon's on the first answer, because an unpinned
// go-dockerclient sends some calls with an old fixed version that recent
// engines reject. Until an engine answers, every call fails with an
// ErrDockerUnavailable error, and a later call tries again.
type Client struct {
	endpoint string
	fromEnv  bool // DOCKER_HOST is set: let the library read the TLS settings too

	mu  sync.Mutex     // guards api, short, apiVersion and diskLimit*
	api *docker.Client // nil until an engine answered
	// short is a second client on the same endpoint for the library's
	// calls that take no context (Info, network lists, inspecting an image
	// or an exec): its HTTP client gives up after callTimeout, so that a
	// wedged engine fails those calls too instead of hanging them.
	short      *docker.Client
	apiVersion string // the daemon's API version, pinned at connect

	// diskLimit and diskLimitWhy say whether the engine's storage driver
	// bounds a container's writable layer (disk.go); guarded by mu.
	diskLimit    diskLimitState
	diskLimitWhy string
}

var _ service.Docker = (*Client)(nil)

// New returns a client for the engine at endpoint, or, when endpoint is empty,
// at $DOCKER_HOST or the first Docker socket found in the usual places.
func New(endpoint string) *Client {
	if endpoint != "" {
		return &Client{endpoint: endpoint}
	}
	if host := os.Getenv("DOCKER_HOST"); host != "" {
		return &Client{endpoint: host, fromEnv: true}
	}
	return &Client{endpoint: findSocket()}
}

// Endpoint is where the client looks for the engine.
func (e *Client) Endpoint() string { return e.endpoint }

// findSocket returns the first Docker socket that exists among the places
// Docker Engine, Docker Desktop, rootless Docker, Colima and Rancher Desktop
// put theirs, or Docker's default when none does.
func findSocket() string {
	const fallback = "/var/run/docker.sock"
	candidates := []string{fallback}
	if home, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates,
			filepath.Join(home, ".docker", "run", "docker.sock"),
			filepath.Join(home, ".colima", "default", "docker.sock"),
			filepath.Join(home, ".rd", "docker.sock"))
	}
	if dir := os.Getenv("XDG_RUNTIME_DIR"); dir != "" {
		candidates = append(candidates, filepath.Join(dir, "docker.sock"))
	}
	for _, c := range candidates {
		if info, err := os.Stat(c); err == nil && info.Mode()&os.ModeSocket != 0 {
			return "unix://" + c
		}
	}
	return "unix://" + fallback
}

// connect returns the API client, connecting and pinning the version first
// if no engine has answered yet.
func (e *Client) connect(ctx context.Context) (*docker.Client, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.api != nil {
		return e.api, nil
	}
	if strings.HasPrefix(e.endpoint, "ssh://") {
		return nil, &service.UnavailableError{Endpoint: e.endpoint,
			Err: errors.New("ssh:// endpoints are not supported; forward the socket and use unix:// or tcp://")}
	}
	probe, err := e.newClient("")
	if err != nil {
		return nil, &service.UnavailableError{Endpoint: e.endpoint, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	env, err := probe.VersionWithContext(ctx)
	if err != nil {
		return nil, &service.UnavailableError{Endpoint: e.endpoint, Err: err}
	}
	version := env.Get("ApiVersion")
	api, err := e.newClient(version)
	if err != nil {
		return nil, &service.UnavailableError{Endpoint: e.endpoint, Err: err}
	}
	short, err := e.newClient(version)
	if err != nil {
		return nil, &service.UnavailableError{Endpoint: e.endpoint, Err: err}
	}
	short.SetTimeout(callTimeout)
	e.api, e.short, e.apiVersion = api, short, version
	return api, nil
}

// connectShort is connect for the library's calls that take no context:
// it returns the client whose every call ends within callTimeout.
func (e *Client) connectShort(ctx context.Context) (*docker.Client, error) {
	if _, err := e.connect(ctx); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.short, nil
}

// newClient makes a library client pinned to apiVersion: from DOCKER_HOST,
// DOCKER_TLS_VERIFY and DOCKER_CERT_PATH when the endpoint came from the
// environment, so that a TLS engine is reached with its certificates.
func (e *Client) newClient(apiVersion string) (*docker.Client, error) {
	var (
		c   *docker.Client
		err error
	)
	if e.fromEnv {
		c, err = docker.NewVersionedClientFromEnv(apiVersion)
	} else {
		c, err = docker.NewVersionedClient(e.endpoint, apiVersion)
	}
	if err != nil {
		return nil, err
	}
	// The version is the daemon's own, just read: the library's check of
	// it, which it makes lazily on the first calls, would only ask again,
	// and it writes the client's fields unguarded (a data race when the
	// first calls run at once).
	c.SkipServerVersionCheck = apiVersion != ""
	return c, nil
}

// Info reports the engine's version, asking the engine every time so that it
// tells the truth when the engine has gone away or come back.
func (e *Client) Info(ctx context.Context) (service.EngineInfo, error) {
	info := service.EngineInfo{Endpoint: e.endpoint}
	api, err := e.connect(ctx)
	if err != nil {
		return info, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	env, err := api.VersionWithContext(ctx)
	if err != nil {
		return info, e.classify(err)
	}
	info.Version = env.Get("Version")
	info.APIVersion = env.Get("ApiVersion")
	return info, nil
}

// classify turns the library's errors into the service's sentinels.
func (e *Client) classify(err error) error {
	var (
		noContainer *docker.NoSuchContainer
		notRunning  *docker.ContainerNotRunning
		apiErr      *docker.Error
		opErr       *net.OpError
		urlErr      *url.Error
	)
	switch {
	case err == nil:
		return nil
	case networkGone(err): // a 404 that is not about the container
		return fmt.Errorf("docker: %v", err)
	case errors.As(err, &noContainer):
		return fmt.Errorf("%w: %s", service.ErrContainerNotFound, noContainer.ID)
	case errors.As(err, &notRunning):
		return fmt.Errorf("%w: %v", service.ErrNotRunning, err)
	case errors.Is(err, docker.ErrNoSuchImage):
		return service.ErrImageNotFound
	case errors.Is(err, docker.ErrContainerAlreadyExists):
		return service.ErrNameConflict
	case errors.As(err, &apiErr):
		return apiError(apiErr)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %v", service.ErrTimeout, err)
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, docker.ErrConnectionRefused), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ENOENT), errors.As(err, &opErr), errors.As(err, &urlErr):
		return &service.UnavailableError{Endpoint: e.endpoint, Err: err}
	default:
		return err
	}
}

// apiError maps an engine's HTTP error by its status.
func apiError(err *docker.Error) error {
	switch err.Status {
	case 404:
		return fmt.Errorf("%w: %s", service.ErrContainerNotFound, err.Message)
	case 409:
		// Conflict: a name in use, or a container that is not running.
		if strings.Contains(err.Message, "is paused") {
			// An exec in a frozen container: "Container ID is paused,
			// unpause the container before exec".
			return fmt.Errorf("%w: %s", service.ErrPaused, err.Message)
		}
		if strings.Contains(err.Message, "is not running") {
			return fmt.Errorf("%w: %s", service.ErrNotRunning, err.Message)
		}
		return fmt.Errorf("%w: %s", service.ErrNameConflict, err.Message)
	default:
		return fmt.Errorf("docker: %s", err.Message)
	}
}
