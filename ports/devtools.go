package ports

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/cdprelay"
	"github.com/pilot-sandbox/pilot-sandbox/relay"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// devtoolsPort is Chromium's DevTools port, which listens on 127.0.0.1
// inside the sandbox only (resources/docker/browser).
const devtoolsPort = "9222"

// openTimeout bounds pilot-open --devtools, which starts Chromium when it
// does not run.
const openTimeout = 30 * time.Second

// devtools keeps the DevTools relays (sandbox/browser) of running
// sandboxes, by project: one per run of a container, so a new start gets
// a new one, with a new secret.
type devtools struct {
	docker Containers

	mu        sync.Mutex // guards byProject
	byProject map[string]*devtoolsRelay
}

// devtoolsRelay is the relay of one run: cdprelay's HTTP front, and the
// relays into the container that carry its connections.
type devtoolsRelay struct {
	run  string // service.RelayTarget.Run
	r    *cdprelay.Relay
	pool *relay.Pool
}

func (r *devtoolsRelay) close() {
	r.r.Close()
	r.pool.Close()
}

// Browser returns the ws:// address of the sandbox's Chromium through a
// DevTools relay on the host (docs/protocol.md, sandbox/browser), starting
// Chromium if it does not run.
func (c *Carrier) Browser(ctx context.Context, project string) (string, error) {
	t, err := c.sb.BrowserTarget(ctx, project)
	if err != nil {
		return "", err
	}
	res, err := c.sb.ExecArgv(ctx, project, service.ExecSpec{Cmd: []string{"pilot-open", "--devtools"}, Timeout: openTimeout, MaxOutput: 4096})
	if err != nil {
		return "", err
	}
	wsPath := strings.TrimSpace(string(res.Stdout))
	if res.ExitCode != 0 || !strings.HasPrefix(wsPath, "/devtools/browser/") {
		return "", fmt.Errorf("chromium's DevTools did not answer in the sandbox (exit %d): %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	r, err := c.devtools.relayFor(t)
	if err != nil {
		return "", err
	}
	// A run that ended while its relay was made gets none: the carrier
	// closes a project's relay as its stop comes, and one made after that
	// would listen until the next sandbox/browser.
	if now, err := c.sb.RelayTarget(ctx, project); err != nil || now.Run() != t.Run() {
		c.devtools.closeProject(t.Project, t.Run())
		return "", fmt.Errorf("%w: it stopped while its browser was reached", service.ErrNotRunning)
	}
	return r.Endpoint(wsPath), nil
}

// relayFor returns the relay of t's run, replacing one of an earlier run.
func (d *devtools) relayFor(t service.RelayTarget) (*cdprelay.Relay, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if old := d.byProject[t.Project]; old != nil {
		if old.run == t.Run() {
			return old.r, nil
		}
		old.close()
		delete(d.byProject, t.Project)
	}
	secret, err := cdprelay.NewSecret()
	if err != nil {
		return nil, err
	}
	// One relay is kept started ahead of need, so that a client's
	// connection does not wait for an exec and its Python (README, The
	// browser: what it costs, has the numbers). It connects to Chromium
	// only when handed out, so it holds nothing of Chromium's and still
	// works after Chromium was closed and started again.
	pool := relay.NewPool(1, func(ctx context.Context) (relay.Session, error) {
		return d.docker.ExecAttach(ctx, t.ContainerID, helper(t, relay.RoleConnect, devtoolsPort))
	})
	pool.Fill()
	r, err := cdprelay.Start(secret, func(ctx context.Context) (net.Conn, error) {
		c, err := pool.Get(ctx)
		if err != nil {
			return nil, fmt.Errorf("reach chromium's DevTools: %w", err)
		}
		return c, nil
	})
	if err != nil {
		pool.Close()
		return nil, err
	}
	d.byProject[t.Project] = &devtoolsRelay{run: t.Run(), r: r, pool: pool}
	return r, nil
}

// closeProject ends the project's relay, if it has one (of run only,
// when run is set): its sandbox is no longer running, so the
// wsEndpoint's port refuses at once rather than at the next
// sandbox/browser.
func (d *devtools) closeProject(project, run string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r := d.byProject[project]; r != nil && (run == "" || r.run == run) {
		r.close()
		delete(d.byProject, project)
	}
}

// closeAll ends every relay.
func (d *devtools) closeAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for p, r := range d.byProject {
		r.close()
		delete(d.byProject, p)
	}
}
