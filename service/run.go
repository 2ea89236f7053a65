package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/disklimit"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/pidguard"
	"github.com/pilot-sandbox/pilot-sandbox/sandboxfs"
)

// One run of a project's container, and what this process keeps of it:
// its VNC passwords, its desktop agent, its pidguard; and the ways into
// the sandbox that are not commands (its desktop, its files).

// run is what the sidecar learns of one run of a project's container, from
// its start to its end: its VNC passwords, whether its desktop answered,
// and its desktop agent. Every start of the container is a new run with a
// new value, so nothing learned of one run (a password, an agent's stream)
// can outlive it or be handed out for another.
type run struct {
	key         runKey
	desktopUser string // runs the desktop agent

	// Guarded by the box's mu.
	secret     desktop.Secret // zero until known
	ready      bool           // its desktop answered
	unreadyWhy string         // why it never did within ReadyTimeout
	// lastActive is its last use seen here, zero until the policy or a
	// use sees it, and sharedAt the last written for other processes
	// (usage.go).
	lastActive, sharedAt time.Time
	viewing              bool      // a viewer was connected at the last look
	viewersAt            time.Time // the last look
	// disk is what the disk policy knows of the run (usage.go).
	disk disklimit.Run

	guarded bool // this process keeps its pilot-pidguard running (startGuard)

	agentMu sync.Mutex     // guards agent; one agent starts at a time
	agent   *desktop.Agent // the desktop agent, once started
}

// runKey names a run: every start of a container gives it a new start time.
type runKey struct {
	id      string
	started time.Time
}

func keyOf(c Container) runKey { return runKey{id: c.ID, started: c.StartedAt} }

// runOf returns the run of c as the box knows it, making a new one (and
// ending the agent of the one before) when c has started since.
func (b *box) runOf(c Container) *run {
	key := keyOf(c)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.run != nil && b.run.key == key {
		return b.run
	}
	b.endRunLocked()
	user, _ := desktopUserOf(c)
	b.run = &run{key: key, desktopUser: user}
	return b.run
}

// currentRun is the run of the box's container if it is the one with this
// ID, or nil.
func (b *box) currentRun(containerID string) *run {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.run != nil && b.run.key.id == containerID {
		return b.run
	}
	return nil
}

// endRun forgets the current run, for a container that is gone, and
// returns the container's ID ("" if no run was known).
func (b *box) endRun() (id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.run != nil {
		id = b.run.key.id
	}
	b.endRunLocked()
	return id
}

func (b *box) endRunLocked() {
	if b.run == nil {
		return
	}
	r := b.run
	b.run = nil
	// Closing the agent's stream may wait on Docker: not under b.mu.
	go r.closeAgent()
}

func (r *run) closeAgent() {
	r.agentMu.Lock()
	defer r.agentMu.Unlock()
	if r.agent != nil {
		r.agent.Close()
		r.agent = nil
	}
}

// agentFor returns the run's desktop agent, starting one if there is none
// or the last one ended.
func (m *Manager) agentFor(ctx context.Context, r *run) (*desktop.Agent, error) {
	r.agentMu.Lock()
	defer r.agentMu.Unlock()
	if r.agent != nil && r.agent.Alive() {
		return r.agent, nil
	}
	if r.agent != nil {
		r.agent.Close()
	}
	a, err := m.startAgent(ctx, r.key.id, r.desktopUser)
	if err != nil {
		return nil, err
	}
	r.agent = a
	return a, nil
}

// startAgent starts the desktop agent in a running container as the
// desktop's user, over one attached exec, and checks that it answers.
func (m *Manager) startAgent(ctx context.Context, containerID, user string) (*desktop.Agent, error) {
	if len(m.cfg.Agent) == 0 {
		return nil, fmt.Errorf("no desktop agent is configured")
	}
	session, err := m.docker.ExecAttach(ctx, containerID, ExecSpec{
		Cmd:  desktop.Command(m.cfg.Agent),
		User: user,
		Env:  []string{desktop.DisplayEnv},
	})
	if err != nil {
		return nil, fmt.Errorf("start desktop agent: %w", err)
	}
	return desktop.Dial(ctx, session)
}

// Each run gets fresh VNC passwords at its start (installed through the
// archive API, so they never appear in the container's environment,
// command line or labels); another process reads them back from the
// container.

// desktopUserOf is the user that runs c's desktop and its agent, and the
// group that may read its VNC passwords.
func desktopUserOf(c Container) (user string, gid int) {
	if c.Labels[images.LabelDesktopUser] == desktop.DesktopUser {
		return desktop.DesktopUser, desktop.DesktopGID
	}
	return desktop.User, desktop.UID
}

// passwdDir is where the container's desktop reads its VNC passwords, and
// whether that is the legacy place, which the sandbox user owns.
func passwdDir(c Container) (dir string, legacy bool) {
	if dir := c.Labels[images.LabelVNCDir]; strings.HasPrefix(dir, "/") {
		return dir, false
	}
	return desktop.LegacyVNCDir, true
}

func passwdPath(c Container) string {
	dir, _ := passwdDir(c)
	return dir + "/passwd"
}

// secretFor returns the VNC passwords of a running container: remembered
// for this run of it, or read back from the container (after the sidecar
// restarted, or another process started it).
func (m *Manager) secretFor(ctx context.Context, b *box, c Container) (desktop.Secret, error) {
	r := b.runOf(c)
	b.mu.Lock()
	s := r.secret
	b.mu.Unlock()
	if s != (desktop.Secret{}) {
		return s, nil
	}
	user, _ := desktopUserOf(c)
	res, err := m.docker.Exec(ctx, c.ID, ExecSpec{
		Cmd: []string{"cat", passwdPath(c)}, User: user, Timeout: 10 * time.Second, MaxOutput: 4096,
	})
	if err != nil {
		return desktop.Secret{}, fmt.Errorf("read VNC password: %w", err)
	}
	s, ok := desktop.ParsePasswdFile(string(res.Stdout))
	if res.ExitCode != 0 || !ok {
		return desktop.Secret{}, errors.New("the sandbox has no VNC password file")
	}
	b.mu.Lock()
	r.secret = s
	b.mu.Unlock()
	return s, nil
}

// startGuard keeps pilot-pidguard running (package pidguard) for this run
// of a container whose desktop runs as a user of its own, which could not
// signal a flood of the sandbox user's; older images start it from their
// entrypoint. The guard outlives this process (its exec does not end with
// the connection), unwatched.
func (m *Manager) startGuard(b *box, c Container) {
	if user, _ := desktopUserOf(c); user == desktop.User {
		return
	}
	r := guardedRun{m: m, b: b, key: keyOf(c)}
	// The first one starts before the start returns: a command-line start
	// exits right after, and the guard must be running by then.
	s, err := r.Start()
	if err != nil {
		m.log.Warn().Err(err).Str("container", c.ID).Msg("could not start pilot-pidguard; fork floods will hold the sandbox's process slots")
		return
	}
	go pidguard.Keep(r, s, pidguard.Pause, m.log.With().Str("container", c.ID).Logger())
}

// guardOnce starts the guard of run r of c unless this process did.
func (m *Manager) guardOnce(b *box, r *run, c Container) {
	b.mu.Lock()
	guard := !r.guarded
	r.guarded = true
	b.mu.Unlock()
	if guard {
		m.startGuard(b, c)
	}
}

// guardedRun is a run of a project's container as pidguard keeps its
// guard.
type guardedRun struct {
	m   *Manager
	b   *box
	key runKey
}

func (g guardedRun) Start() (io.ReadCloser, error) {
	return g.m.docker.ExecAttach(context.Background(), g.key.id, ExecSpec{Cmd: desktop.GuardCommand, User: desktop.User})
}

// GoesOn says whether the container still runs the run, and the box still
// knows it.
func (g guardedRun) GoesOn() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	goesOn, _ := g.m.runGoesOn(ctx, g.key)
	return goesOn && g.b.currentRun(g.key.id) != nil
}

// The ways into a sandbox that are not commands: its desktop, driven
// through the current run's agent, and its files, through the archive API
// (running or stopped) and execs while it runs.

// Desktop returns the display of the project's running sandbox, driven
// through the desktop agent of the container's current run.
func (m *Manager) Desktop(ctx context.Context, path string) (*desktop.Desktop, error) {
	b, st, err := m.running(ctx, path)
	if err != nil {
		return nil, err
	}
	return desktop.New(&desktopConn{m: m, b: b, containerID: st.ContainerID}, st.Display), nil
}

// Screenshot captures the project's display at full size.
func (m *Manager) Screenshot(ctx context.Context, path string) (desktop.Screenshot, error) {
	d, err := m.Desktop(ctx, path)
	if err != nil {
		return desktop.Screenshot{}, err
	}
	return d.Screenshot(ctx)
}

// desktopConn is a desktop.Conn for one container of a project.
type desktopConn struct {
	m           *Manager
	b           *box
	containerID string
}

func (c *desktopConn) Agent(ctx context.Context) (*desktop.Agent, error) {
	r := c.b.currentRun(c.containerID)
	if r == nil {
		return nil, fmt.Errorf("%w: it stopped", ErrNotRunning)
	}
	return c.m.agentFor(ctx, r)
}

// Explain turns an agent that went away into what happened to the sandbox:
// most often it was stopped.
func (c *desktopConn) Explain(ctx context.Context, err error) error {
	if errors.Is(err, desktop.ErrTimeout) {
		return fmt.Errorf("%w: %v", ErrTimeout, err)
	}
	if !errors.Is(err, desktop.ErrGone) && !errors.Is(err, ErrNotRunning) && !errors.Is(err, ErrContainerNotFound) {
		return err
	}
	c.m.recheck(ctx, c.b)
	if st := c.b.snapshot(); st == nil || st.Status != StatusRunning {
		return fmt.Errorf("%w: it stopped", ErrNotRunning)
	}
	return err
}

// StageCopy is the progress stage of an upload or a download.
const StageCopy = "copy"

// Files returns the files of the project's sandbox, running or stopped
// (docs/protocol.md, Sandbox files): a file call is a use of the sandbox, and an
// upload's or download's progress is the project's sandbox/progress.
func (m *Manager) Files(ctx context.Context, path string) (*sandboxfs.FS, error) {
	st, err := m.Status(ctx, path)
	switch {
	case err != nil:
		return nil, err
	case st == nil:
		return nil, ErrNoSandbox
	case st.ContainerID == "":
		return nil, fmt.Errorf("%w (it is %s and has no container yet)", ErrNotRunning, st.Status)
	}
	project := st.ProjectPath
	m.Touch(project)
	return sandboxfs.New(m.docker, st.ContainerID, sandboxfs.Options{
		Running: st.Status == StatusRunning,
		Exec: func(ctx context.Context, c sandboxfs.Command) (sandboxfs.ExecResult, error) {
			res, err := m.ExecArgv(ctx, project, ExecSpec{Cmd: c.Argv, Stdin: c.Stdin, MaxOutput: c.MaxOutput, Timeout: c.Timeout})
			return sandboxfs.ExecResult{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr, Truncated: res.Truncated}, err
		},
		Progress: func(done sandboxfs.Copied, total int64) {
			m.progress(project, StageCopy, copyMessage(done, total), int(done.Bytes), int(total))
		},
	}), nil
}

func copyMessage(done sandboxfs.Copied, total int64) string {
	if total > 0 {
		return fmt.Sprintf("Copied %d files, %.1f of %.1f MB", done.Files, float64(done.Bytes)/1e6, float64(total)/1e6)
	}
	return fmt.Sprintf("Copied %d files, %.1f MB", done.Files, float64(done.Bytes)/1e6)
}
