package service

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/cdprelay"
	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

// LabelBrowser marks an image with a browser: its value names it.
const LabelBrowser = "pilot.sandbox.browser"

// devtoolsPipe, run in the sandbox, joins its stdin and stdout to
// Chromium's DevTools port, which listens on 127.0.0.1 inside only: one
// per connection through the relay. It connects once the first bytes come,
// so that one can wait started for the next connection (spareDialer).
const devtoolsPipe = `import os, socket, threading
first = os.read(0, 65536)
if not first:
    raise SystemExit
s = socket.create_connection(("127.0.0.1", 9222))
s.sendall(first)
def up():
    while True:
        d = os.read(0, 65536)
        if not d:
            s.shutdown(socket.SHUT_WR)
            return
        s.sendall(d)
threading.Thread(target=up, daemon=True).start()
while True:
    d = s.recv(65536)
    if not d:
        break
    os.write(1, d)
`

// relays are the DevTools relays of running sandboxes, by project.
type relays struct {
	mu        sync.Mutex
	byProject map[string]*relay
}

// relay is the relay of one run of a container: a new start gets a new one,
// with a new secret.
type relay struct {
	container string
	startedAt int64
	r         *cdprelay.Relay
	spare     *spareDialer
}

func (r *relay) close() {
	r.r.Close()
	r.spare.Close()
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
	id := st.ContainerID
	spare := newSpareDialer(func(ctx context.Context) (net.Conn, error) { return m.dialDevtools(ctx, id) })
	r, err := cdprelay.Start(secret, spare.Dial)
	if err != nil {
		spare.Close()
		return nil, err
	}
	m.relays.byProject[st.ProjectPath] = &relay{container: st.ContainerID, startedAt: st.StartedAt, r: r, spare: spare}
	return r, nil
}

// dialDevtools opens a connection to Chromium's DevTools port inside the
// container, through an attached exec.
func (m *Manager) dialDevtools(ctx context.Context, container string) (net.Conn, error) {
	s, err := m.docker.ExecAttach(ctx, container, ExecSpec{
		Cmd:  []string{"python3", "-c", devtoolsPipe},
		User: desktop.User,
	})
	if err != nil {
		return nil, fmt.Errorf("reach chromium's DevTools: %w", err)
	}
	return sessionConn{s}, nil
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

// sessionConn is an attached exec as a net.Conn for the relay's HTTP
// transport, which sets no deadlines on it.
type sessionConn struct{ ExecSession }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "exec" }
func (pipeAddr) String() string  { return "sandbox" }

func (sessionConn) LocalAddr() net.Addr              { return pipeAddr{} }
func (sessionConn) RemoteAddr() net.Addr             { return pipeAddr{} }
func (sessionConn) SetDeadline(time.Time) error      { return nil }
func (sessionConn) SetReadDeadline(time.Time) error  { return nil }
func (sessionConn) SetWriteDeadline(time.Time) error { return nil }

var _ io.ReadWriteCloser = sessionConn{}
