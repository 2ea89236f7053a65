package service

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/cdprelay"
	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/relay"
)

// LabelBrowser marks an image with a browser: its value names it.
const LabelBrowser = "pilot.sandbox.browser"

// devtoolsPort is Chromium's DevTools port, which listens on 127.0.0.1
// inside the sandbox only (resources/docker/browser).
const devtoolsPort = "9222"

// relays are the DevTools relays of running sandboxes, by project.
type relays struct {
	mu        sync.Mutex
	byProject map[string]*devtoolsRelay
}

// relay is the relay of one run of a container: a new start gets a new one,
// with a new secret.
type devtoolsRelay struct {
	container string
	startedAt int64
	r         *cdprelay.Relay
	pool      *relay.Pool
}

func (r *devtoolsRelay) close() {
	r.r.Close()
	r.pool.Close()
}

// Browser returns the ws:// address of the sandbox's Chromium through a
// relay on the host (PROTOCOL.md, sandbox/browser), starting Chromium if it
// does not run.
func (m *Manager) Browser(ctx context.Context, path string) (string, error) {
	b, st, err := m.running(ctx, path)
	if err != nil {
		return "", err
	}
	c, err := m.docker.InspectContainer(ctx, st.ContainerID)
	if err != nil {
		return "", err
	}
	if c.Labels[LabelBrowser] == "" {
		return "", fmt.Errorf("%w: its image %s is the desktop without a browser (set sandbox.image to \"browser\" and remove the sandbox)", ErrNoBrowser, st.Image)
	}
	res, err := m.ExecArgv(ctx, path, ExecSpec{Cmd: []string{"pilot-open", "--devtools"}, Timeout: 30 * time.Second, MaxOutput: 4096})
	if err != nil {
		return "", err
	}
	wsPath := strings.TrimSpace(string(res.Stdout))
	if res.ExitCode != 0 || !strings.HasPrefix(wsPath, "/devtools/browser/") {
		return "", fmt.Errorf("chromium's DevTools did not answer in the sandbox (exit %d): %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	r, err := m.relayFor(b, st)
	if err != nil {
		return "", err
	}
	return r.Endpoint(wsPath), nil
}

// relayFor returns the relay of the sandbox's current run, replacing one of
// an earlier run. It makes none for a run that has ended meanwhile: commit
// records a state before it closes the relay, so checking the state under
// the relays' lock leaves no relay behind a stop.
func (m *Manager) relayFor(b *box, st State) (*cdprelay.Relay, error) {
	m.relays.mu.Lock()
	defer m.relays.mu.Unlock()
	if cur := b.snapshot(); cur == nil || cur.Status != StatusRunning ||
		cur.ContainerID != st.ContainerID || cur.StartedAt != st.StartedAt {
		return nil, fmt.Errorf("%w: it stopped while its browser was reached", ErrNotRunning)
	}
	if old := m.relays.byProject[st.ProjectPath]; old != nil {
		if old.container == st.ContainerID && old.startedAt == st.StartedAt {
			return old.r, nil
		}
		old.close()
		delete(m.relays.byProject, st.ProjectPath)
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
	pool := relay.NewPool(1, m.devtoolsStart(st.ContainerID))
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
	m.relays.byProject[st.ProjectPath] = &devtoolsRelay{container: st.ContainerID, startedAt: st.StartedAt, r: r, pool: pool}
	return r, nil
}

// devtoolsStart starts relays to Chromium's DevTools port inside the
// container, over attached execs.
func (m *Manager) devtoolsStart(container string) relay.Start {
	return func(ctx context.Context) (relay.Session, error) {
		return m.docker.ExecAttach(ctx, container, ExecSpec{Cmd: relay.Command(relay.RoleConnect, devtoolsPort), User: desktop.User})
	}
}

// closeRelay ends the project's DevTools relay, if it has one: commit calls
// it whenever the sandbox is no longer running (stopped, removed, died), so
// the wsEndpoint's port refuses at once rather than at the next
// sandbox/browser.
func (m *Manager) closeRelay(project string) {
	m.relays.mu.Lock()
	defer m.relays.mu.Unlock()
	if r := m.relays.byProject[project]; r != nil {
		r.close()
		delete(m.relays.byProject, project)
	}
}

// CloseRelays ends every DevTools relay (at the sidecar's shutdown).
func (m *Manager) CloseRelays() {
	m.relays.mu.Lock()
	defer m.relays.mu.Unlock()
	for p, r := range m.relays.byProject {
		r.close()
		delete(m.relays.byProject, p)
	}
}
