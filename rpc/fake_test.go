package rpc

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"

	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// fakeService is a hand-written fake of every slice of Services but the
// agent tools (fakeTools), whose behaviour a conversation picks by the
// base name of the project directory it sends:
//
//	ok, other   sandboxes that start (with progress and events), run and stop
//	none        a project that never has a sandbox
//	buildfail   start fails building the image (image_build_failed, data.log)
//	startfail   start fails waiting for the desktop (start_failed, data.log)
//	bug         every call fails with a plain Go error (internal)
//	slowdocker  every call fails with service.ErrTimeout (timeout)
//	readonly    .pilot cannot be written: setToolsEnabled fails (file_error)
//	badsettings start refuses a wrong setting (start_failed, data.file)
//	crowded     start is refused past maxRunning, naming ok as running
//	            (too_many_sandboxes, data.running)
//	held        calls wait until the conversation releases them, or their
//	            context ends
//
// With Docker switched off (setDocker(false)), every call on a project
// answers docker_unavailable after its path was checked, as the real
// manager does.
type fakeService struct {
	events chan service.Event

	mu       sync.Mutex // guards the fields below
	dockerUp bool
	tools    map[string]bool
	states   map[string]service.State // by canonical project path
	gate     chan struct{}            // closed to release the held calls
	held     map[*int]heldCall        // calls waiting at a gate, by a unique key
	procs    []service.Process        // started in the background
	exposed  map[int]bool             // exposed ports
	forwards map[int]int              // forwarded ports: port -> host port
	touched  []string                 // the projects Touch was called with
	approved bool                     // the stranger project's request was approved
}

// heldCall is a call waiting at a gate.
type heldCall struct {
	ctx  context.Context
	gate chan struct{}
}

func newFakeService() *fakeService {
	return &fakeService{
		events:   make(chan service.Event, 64),
		dockerUp: true,
		tools:    map[string]bool{},
		states:   map[string]service.State{},
		gate:     make(chan struct{}),
		held:     map[*int]heldCall{},
	}
}

const fakeEndpoint = "unix:///var/run/docker.sock"

// fakeProjects makes the project directories fakeService knows under root,
// plus a file and a symlink to ok.
func fakeProjects(root string) error {
	for _, name := range []string{"ok", "other", "none", "buildfail", "startfail", "bug", "slowdocker", "held", "readonly", "badsettings", "crowded", "stranger", "busy"} {
		if err := os.Mkdir(filepath.Join(root, name), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(root, "file.txt"), nil, 0o644); err != nil {
		return err
	}
	return os.Symlink(filepath.Join(root, "ok"), filepath.Join(root, "link"))
}

func (f *fakeService) setDocker(up bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dockerUp = up
}

// heldCalls counts the calls waiting at the gate, leaving out those
// cancelled or released already: they are about to answer.
func (f *fakeService) heldCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, call := range f.held {
		if call.ctx.Err() == nil && call.gate == f.gate {
			n++
		}
	}
	return n
}

// release lets every held call go on.
func (f *fakeService) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.gate)
	f.gate = make(chan struct{})
}

// publish drops the event when the subscriber is too far behind, as the
// manager's broker does.
func (f *fakeService) publish(ev service.Event) {
	select {
	case f.events <- ev:
	default:
	}
}

func (f *fakeService) unavailable() error {
	return &service.UnavailableError{Endpoint: fakeEndpoint, Err: errors.New("dial unix /var/run/docker.sock: connect: connection refused")}
}

// enter resolves the project and applies its behaviour; a nil error means
// the call goes on normally.
func (f *fakeService) enter(ctx context.Context, path string) (string, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	up, gate := f.dockerUp, f.gate
	f.mu.Unlock()
	switch {
	case !up:
		return "", f.unavailable()
	case filepath.Base(project) == "bug":
		return "", errors.New("the fake service has a bug")
	case filepath.Base(project) == "slowdocker":
		return "", fmt.Errorf("inspect container: %w: context deadline exceeded", service.ErrTimeout)
	case filepath.Base(project) == "held":
		key := new(int)
		f.mu.Lock()
		f.held[key] = heldCall{ctx, gate}
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			delete(f.held, key)
			f.mu.Unlock()
		}()
		select {
		case <-gate:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return project, nil
}

func (f *fakeService) DockerStatus(context.Context) service.DockerStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.dockerUp {
		return service.DockerStatus{Endpoint: fakeEndpoint, Error: f.unavailable().Error()}
	}
	return service.DockerStatus{Available: true, Endpoint: fakeEndpoint, Version: "20.10.24", APIVersion: "1.41"}
}

func (f *fakeService) state(project string) (service.State, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.states[project]
	return st, ok
}

// commit records a state and announces it, as the manager does.
func (f *fakeService) commit(project string, st *service.State) {
	f.mu.Lock()
	if st == nil {
		delete(f.states, project)
	} else {
		cp := *st // the caller goes on changing st
		st = &cp
		f.states[project] = cp
	}
	f.mu.Unlock()
	f.publish(service.Event{Kind: service.EventState, Project: project, State: st})
}

func (f *fakeService) progress(project, stage, msg string, current, total int) {
	f.publish(service.Event{Kind: service.EventProgress, Project: project, Progress: service.Progress{
		ProjectPath: project, Stage: stage, Message: msg, Current: current, Total: total,
	}})
}

// strangerAsks is what the project "stranger" asks before it starts.
var strangerAsks = service.Approval{Kind: service.ApprovalDockerfile, Summary: "build .pilot/Dockerfile (40B) FROM the browser image", Digest: "sha256:good"}

// Approve approves the stranger project's "sha256:good" only.
func (f *fakeService) Approve(ctx context.Context, path, digest string) error {
	project, err := f.enter(ctx, path)
	if err != nil {
		return err
	}
	if filepath.Base(project) != "stranger" || digest != strangerAsks.Digest {
		return &service.ArgumentError{Name: "digest", Reason: "is not what the project asks now"}
	}
	f.mu.Lock()
	f.approved = true
	f.mu.Unlock()
	return nil
}

func (f *fakeService) Start(ctx context.Context, path string) (service.State, error) {
	project, err := f.enter(ctx, path)
	if err != nil {
		return service.State{}, err
	}
	if st, ok := f.state(project); ok && st.Status == service.StatusRunning {
		return st, nil
	}
	f.mu.Lock()
	asks := filepath.Base(project) == "stranger" && !f.approved
	f.mu.Unlock()
	if asks {
		return service.State{}, &service.ApprovalError{Project: project, Approval: strangerAsks}
	}
	st := service.State{
		ProjectPath: project, ContainerID: "c0ffee", ContainerName: "pilot-sandbox-" + filepath.Base(project),
		Image: "pilot-sandbox:latest", Status: service.StatusStarting, Display: desktop.DefaultDisplay, CreatedAt: 1700000000000,
	}
	if filepath.Base(project) == "crowded" {
		ok := filepath.Join(filepath.Dir(project), "ok")
		return service.State{}, &service.TooManyError{Max: 1, Running: []service.RunningSandbox{{ProjectPath: ok, ContainerID: "c0ffee", ContainerName: "pilot-sandbox-ok"}}}
	}
	if filepath.Base(project) == "badsettings" {
		return service.State{}, &projectfs.ConfigError{File: filepath.Join(project, ".pilot", "settings.json"), Field: "sandbox.memory", Reason: `must be at least 512m; it is "64m"`}
	}
	f.commit(project, &st)
	switch filepath.Base(project) {
	case "buildfail":
		f.progress(project, service.StageImage, "Step 1/2 : FROM debian:bookworm-slim", 1, 2)
		f.commit(project, nil)
		return service.State{}, service.NewBuildError([]string{"Step 2/2 : RUN apt-get install xvfb", "E: Unable to locate package xvfb"}, errors.New("the command returned a non-zero code: 100"))
	case "startfail":
		f.progress(project, service.StageStart, "Starting the desktop", 0, 0)
		st.Status, st.Error = service.StatusError, "the container exited with code 1 before its desktop was ready"
		f.commit(project, &st)
		return service.State{}, service.NewStartError([]string{"Xvfb: cannot open display :99"}, errors.New(st.Error))
	}
	f.progress(project, service.StageCreate, "Creating the sandbox container "+st.ContainerName, 0, 0)
	f.progress(project, service.StageStart, "Starting the desktop", 0, 0)
	st.Status, st.WSPort, st.VNCPort, st.StartedAt = service.StatusRunning, 32768, 32769, 1700000001000
	st.ViewerURL = "http://127.0.0.1:32768/vnc.html#autoconnect=true&password=control"
	st.WatchURL = "http://127.0.0.1:32768/vnc.html#autoconnect=true&view_only=true&password=view"
	f.commit(project, &st)
	f.progress(project, service.StageReady, "The desktop is ready on 127.0.0.1:32768", 0, 0)
	return st, nil
}

func (f *fakeService) Stop(ctx context.Context, path string) (service.State, error) {
	project, err := f.enter(ctx, path)
	if err != nil {
		return service.State{}, err
	}
	st, ok := f.state(project)
	if !ok {
		return service.State{}, service.ErrNoSandbox
	}
	if st.Status != service.StatusStopped {
		st.Status, st.WSPort, st.VNCPort, st.StartedAt, st.ViewerURL, st.WatchURL = service.StatusStopped, 0, 0, 0, "", ""
		f.commit(project, &st)
	}
	return st, nil
}

// Remove takes a project whose directory is gone, as the manager does.
func (f *fakeService) Remove(ctx context.Context, path string) (bool, error) {
	project, err := projectfs.CanonicalOrGone(path)
	if err != nil {
		return false, err
	}
	if !projectfs.Gone(project) {
		if _, err := f.enter(ctx, project); err != nil {
			return false, err
		}
	}
	if _, ok := f.state(project); !ok {
		return false, nil
	}
	f.commit(project, nil)
	return true, nil
}

// RemoveContainer removes the sandbox with the container ID; "foreign"
// names a container that is no sandbox.
func (f *fakeService) RemoveContainer(_ context.Context, id string) (bool, error) {
	if id == "foreign" {
		return false, &service.ArgumentError{Name: "containerId", Reason: "foreign is not a pilot-sandbox sandbox"}
	}
	for _, st := range f.sorted() {
		if st.ContainerID == id {
			f.commit(st.ProjectPath, nil)
			return true, nil
		}
	}
	return false, nil
}

func (f *fakeService) Touch(project string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.touched = append(f.touched, project)
}

func (f *fakeService) Browser(ctx context.Context, path string) (string, error) {
	return "", service.ErrNoBrowser
}

func (f *fakeService) Status(ctx context.Context, path string) (*service.State, error) {
	project, err := f.enter(ctx, path)
	if err != nil {
		return nil, err
	}
	if st, ok := f.state(project); ok {
		return &st, nil
	}
	return nil, nil
}

func (f *fakeService) List(context.Context) ([]service.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.dockerUp {
		return nil, f.unavailable()
	}
	return f.sortedLocked(), nil
}

func (f *fakeService) sorted() []service.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sortedLocked()
}

func (f *fakeService) sortedLocked() []service.State {
	var out []service.State
	for _, st := range f.states {
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b service.State) int { return strings.Compare(a.ProjectPath, b.ProjectPath) })
	return out
}

func (f *fakeService) Close(ctx context.Context, path string) (*service.State, error) {
	project, err := f.enter(ctx, path)
	if err != nil {
		return nil, err
	}
	if _, ok := f.state(project); !ok {
		return nil, nil
	}
	st, err := f.Stop(ctx, project)
	return &st, err
}

// Pause freezes a running sandbox, as the manager does.
func (f *fakeService) Pause(ctx context.Context, path string) (service.State, error) {
	project, err := f.enter(ctx, path)
	if err != nil {
		return service.State{}, err
	}
	st, ok := f.state(project)
	switch {
	case !ok:
		return service.State{}, service.ErrNoSandbox
	case st.Status == service.StatusPaused:
		return st, nil
	case st.Status != service.StatusRunning:
		return service.State{}, fmt.Errorf("%w (it is %s)", service.ErrNotRunning, st.Status)
	}
	st.Status, st.WSPort, st.VNCPort, st.ViewerURL, st.WatchURL = service.StatusPaused, 0, 0, "", ""
	f.commit(project, &st)
	return st, nil
}

// CloseProject pauses, as the manager does without a config.json.
func (f *fakeService) CloseProject(ctx context.Context, path string) (*service.State, error) {
	st, err := f.Pause(ctx, path)
	if errors.Is(err, service.ErrNoSandbox) {
		return nil, nil
	}
	return &st, err
}

func (f *fakeService) running(ctx context.Context, path string) error {
	project, err := f.enter(ctx, path)
	if err != nil {
		return err
	}
	if st, ok := f.state(project); !ok {
		return service.ErrNoSandbox
	} else if st.Status != service.StatusRunning {
		return fmt.Errorf("%w (it is %s)", service.ErrNotRunning, st.Status)
	}
	return nil
}

func (f *fakeService) Exec(ctx context.Context, path string, r service.ExecRequest) (service.ExecOutput, error) {
	if err := f.running(ctx, path); err != nil {
		return service.ExecOutput{}, err
	}
	if r.Command == "" {
		return service.ExecOutput{}, &service.ArgumentError{Name: "command", Reason: "must not be empty"}
	}
	out := service.ExecOutput{ExitCode: 3, Stdout: fmt.Sprintf("ran %q in %q for %s\n", r.Command, r.WorkDir, r.Timeout), Stderr: "warning\n"}
	if r.Stdin != nil || r.Env != nil {
		out.Stdout += fmt.Sprintf("stdin %q, env %v\n", *cmp.Or(r.Stdin, new(string)), r.Env)
	}
	if r.Output != nil {
		r.Output(service.StreamStdout, out.Stdout)
		r.Output(service.StreamStderr, out.Stderr)
	}
	return out, nil
}

func (f *fakeService) Background(ctx context.Context, path string, r service.ExecRequest) (service.BackgroundProcess, error) {
	if err := f.running(ctx, path); err != nil {
		return service.BackgroundProcess{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	pid := 100 + len(f.procs)
	p := service.Process{PID: pid, Command: r.Command, StartedAt: 1700000000000, LogPath: fmt.Sprintf("/tmp/pilot-bg/%d.log", pid)}
	f.procs = append(f.procs, p)
	return service.BackgroundProcess{PID: p.PID, LogPath: p.LogPath}, nil
}

func (f *fakeService) Processes(ctx context.Context, path string) ([]service.Process, error) {
	if err := f.running(ctx, path); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]service.Process{}, f.procs...), nil
}

func (f *fakeService) Kill(ctx context.Context, path string, pid int) error {
	if err := f.running(ctx, path); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.IndexFunc(f.procs, func(p service.Process) bool { return p.PID == pid })
	if i < 0 {
		return &service.ArgumentError{Name: "pid", Reason: "no such background process"}
	}
	f.procs = slices.Delete(f.procs, i, i+1)
	return nil
}

func (f *fakeService) ExposePort(ctx context.Context, path string, port int) (ports.Exposed, error) {
	if err := f.running(ctx, path); err != nil {
		return ports.Exposed{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.exposed == nil {
		f.exposed = map[int]bool{}
	}
	f.exposed[port] = true
	return fakeExposed(port), nil
}

func fakeExposed(port int) ports.Exposed {
	return ports.Exposed{Port: port, HostPort: 40000 + port, URL: fmt.Sprintf("http://127.0.0.1:%d/", 40000+port)}
}

func (f *fakeService) ExposedPorts(path string) []ports.Exposed {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []ports.Exposed{}
	for _, port := range slices.Sorted(maps.Keys(f.exposed)) {
		out = append(out, fakeExposed(port))
	}
	return out
}

func (f *fakeService) ListeningPorts(ctx context.Context, path string) ([]ports.Listening, error) {
	if err := f.running(ctx, path); err != nil {
		return nil, err
	}
	return []ports.Listening{{Port: 8000, Process: "python3"}, {Port: 9222}}, nil
}

func (f *fakeService) ClosePort(path string, port int) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	closed := f.exposed[port]
	delete(f.exposed, port)
	return closed, nil
}

// ForwardPort forwards on a stopped sandbox too, as the sidecar does
// (the list is kept for the next start).
func (f *fakeService) ForwardPort(ctx context.Context, path string, port, hostPort int) (ports.Forwarded, error) {
	if hostPort == 0 {
		hostPort = port
	}
	if port == 5900 {
		return ports.Forwarded{}, &service.ArgumentError{Name: "port", Reason: "Xvfb already listens on port 5900 in the sandbox"}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.forwards == nil {
		f.forwards = map[int]int{}
	}
	f.forwards[port] = hostPort
	return ports.Forwarded{Port: port, HostPort: hostPort}, nil
}

func (f *fakeService) ForwardedPorts(path string) ([]ports.Forwarded, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []ports.Forwarded{}
	for _, port := range slices.Sorted(maps.Keys(f.forwards)) {
		out = append(out, ports.Forwarded{Port: port, HostPort: f.forwards[port]})
	}
	return out, nil
}

func (f *fakeService) CloseForward(path string, port int) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, closed := f.forwards[port]
	delete(f.forwards, port)
	return closed, nil
}

func (f *fakeService) Screenshot(ctx context.Context, path string) (desktop.Screenshot, error) {
	if err := f.running(ctx, path); err != nil {
		return desktop.Screenshot{}, err
	}
	return desktop.Screenshot{PNG: []byte("\x89PNG\r\n\x1a\n"), Width: 1280, Height: 800}, nil
}

func (f *fakeService) ToolsEnabled(path string) (bool, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tools[project], nil
}

func (f *fakeService) SetToolsEnabled(path string, on bool) (bool, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return false, err
	}
	if filepath.Base(project) == "readonly" {
		return false, &projectfs.FileError{Path: filepath.Join(project, ".pilot", "settings.json"), Problem: projectfs.FileUnwritable, Err: syscall.EROFS}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tools[project] = on
	return on, nil
}

func (f *fakeService) Subscribe() (<-chan service.Event, func()) { return f.events, func() {} }

// services serves every slice from f, and the agent tools from fakeTools.
func (f *fakeService) services() Services {
	return Services{
		Lifecycle: f, Exec: f, Files: f, Ports: f, Browser: f, Screen: f,
		Settings: f, ToolAccess: f, Tools: fakeTools{}, Events: f,
	}
}

// fakeTools is a Tools with one tool, echo, which answers its text.
type fakeTools struct{}

func (fakeTools) List() []tools.Tool {
	return []tools.Tool{{
		Name:        "echo",
		Description: "Answers its text.",
		InputSchema: &jsonschema.Schema{
			Type:       "object",
			Properties: map[string]*jsonschema.Schema{"text": {Type: "string"}},
			Required:   []string{"text"},
		},
	}}
}

func (fakeTools) Call(_ context.Context, _, name string, args json.RawMessage) (tools.Result, error) {
	if name != "echo" {
		return tools.Result{}, fmt.Errorf("%w %q; the tools are [echo]", tools.ErrUnknownTool, name)
	}
	var a struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal(args, &a) != nil || a.Text == nil {
		return tools.Errorf("text: must be a string"), nil
	}
	return tools.Text(*a.Text), nil
}
