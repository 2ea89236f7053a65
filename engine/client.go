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
	"io"
	"net"
	"net/http"
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
	source   string // where endpoint came from (endpoint.go), for doctor
	fromEnv  bool   // DOCKER_HOST is set: let the library read the TLS settings too
	tlsDir   string // a docker context's TLS files, if it has them
	// ssh is the dialer of an ssh:// endpoint (sshdial.go); nil for the
	// others.
	ssh *sshDialer
	// unusable is why the endpoint cannot be used at all (a docker
	// context that cannot be read, a malformed ssh:// address): every
	// call says it.
	unusable error

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

	// gates keep a pause from landing on an exec starting (gate.go).
	gates execGates
}

var _ service.Docker = (*Client)(nil)

// New returns a client for the engine at endpoint, or, when endpoint is
// empty, at the engine the docker CLI would use (endpoint.go): DOCKER_HOST,
// the current docker context, or the first Docker socket found in the
// usual places.
func New(endpoint string) *Client {
	c := choice{endpoint: endpoint, source: "given"}
	if endpoint == "" {
		c = chooseEngine()
	}
	e := &Client{endpoint: c.endpoint, source: c.source, fromEnv: c.fromEnv, tlsDir: c.tls, unusable: c.err}
	if e.unusable == nil && strings.HasPrefix(e.endpoint, "ssh://") {
		e.ssh, e.unusable = newSSHDialer(e.endpoint)
	}
	return e
}

// Endpoint is where the client looks for the engine.
func (e *Client) Endpoint() string { return e.endpoint }

// Remote says whether the engine runs on another machine (ssh://, or TCP
// to an address other than this machine's loopback): the ports it
// publishes on its 127.0.0.1 and its containers' addresses are then out
// of this machine's reach, and the sidecar carries what it needs itself.
func (e *Client) Remote() bool { return remoteEndpoint(e.endpoint) }

// Route says where the endpoint came from and, over ssh, how the engine
// is reached, for doctor.
func (e *Client) Route() string {
	if e.ssh != nil {
		return e.source + "; " + e.ssh.Route()
	}
	return e.source
}

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
	if e.unusable != nil {
		return nil, e.unavailable(e.unusable)
	}
	probe, err := e.newClient("")
	if err != nil {
		return nil, e.unavailable(err)
	}
	ctx, cancel := context.WithTimeout(ctx, e.connectTimeout())
	defer cancel()
	version, err := pingVersion(ctx, probe)
	if err != nil {
		return nil, e.unavailable(err)
	}
	api, err := e.newClient(version)
	if err != nil {
		return nil, e.unavailable(err)
	}
	short, err := e.newClient(version)
	if err != nil {
		return nil, e.unavailable(err)
	}
	short.SetTimeout(callTimeout)
	e.api, e.short, e.apiVersion = api, short, version
	return api, nil
}

// pingVersion is the engine's API version, from the header of its
// GET /_ping, as the docker CLI reads it: GET /version asks containerd
// for its version too, and took 8 to 78 ms against /_ping's 0.4 to 5 ms
// at a load average of 14 (curl, 5 each), on every CLI command's first
// call. An engine whose ping says none is asked /version.
func pingVersion(ctx context.Context, probe *docker.Client) (string, error) {
	base, err := endpointBase(probe.Endpoint(), probe.TLSConfig != nil)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/_ping", nil)
	if err != nil {
		return "", err
	}
	resp, err := probe.HTTPClient.Do(req)
	if err != nil {
		return "", err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	if v := resp.Header.Get("Api-Version"); resp.StatusCode == http.StatusOK && v != "" {
		return v, nil
	}
	env, err := probe.VersionWithContext(ctx)
	if err != nil {
		return "", err
	}
	return env.Get("ApiVersion"), nil
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
	switch {
	case e.ssh != nil:
		c, err = e.ssh.client(apiVersion)
	case e.fromEnv:
		c, err = docker.NewVersionedClientFromEnv(apiVersion)
	case e.tlsDir != "":
		c, err = docker.NewVersionedTLSClient(e.endpoint, filepath.Join(e.tlsDir, "cert.pem"),
			filepath.Join(e.tlsDir, "key.pem"), filepath.Join(e.tlsDir, "ca.pem"), apiVersion)
	default:
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
		errors.Is(err, syscall.ENOENT), errors.As(err, &opErr), errors.As(err, &urlErr),
		e.ssh != nil && dropped(err):
		return e.unavailable(err)
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

// unavailable is ErrDockerUnavailable for err, saying what to do about an
// engine over ssh, where starting Docker here is not the answer.
func (e *Client) unavailable(err error) error {
	u := &service.UnavailableError{Endpoint: e.endpoint, Err: err}
	if e.ssh == nil {
		return u
	}
	check := fmt.Sprintf("check it with: %s docker version", e.ssh.target.command())
	var se *sshError
	switch {
	case errors.As(err, &se) && se.advice != "":
		u.Advice = se.advice
	case errors.As(err, &se):
		u.Advice = check
	default:
		u.Advice = "the next call connects again (" + check + ")"
	}
	return u
}

// connectTimeout bounds the first answer of an engine: over ssh it
// includes a login (ssh's ConnectTimeout is 15 s) and a first command.
func (e *Client) connectTimeout() time.Duration {
	if e.ssh != nil {
		return 45 * time.Second
	}
	return 5 * time.Second
}

// dropped says whether err is a connection that ended under a call: over
// ssh, a link that dropped (the master ended, and every channel with it).
func dropped(err error) bool {
	return errors.Is(err, errDropped) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
