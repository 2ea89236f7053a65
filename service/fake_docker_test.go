package service

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/images"
)

// fakeDocker is an in-memory Docker engine for unit tests of the manager's
// logic. It keeps containers, images and uploaded files, and hands out new
// host ports on every start like the real engine.
type fakeDocker struct {
	mu         sync.Mutex // guards everything below
	down       error      // when set, every call fails with it
	containers map[string]*Container
	files      map[string]map[string]string // container ID -> path -> content
	images     map[string]map[string]string // tag -> labels
	// registry holds the images a pull can fetch: reference -> labels.
	registry map[string]map[string]string
	nextPort int
	nextID   int
	calls    map[string]int
	capacity Capacity // what Capacity answers; zero: 8 CPUs, 32 GiB
	// startErrs are errors StartContainer returns, one a call, before it
	// starts containers again.
	startErrs  []error
	buildErr   error
	buildLines []string
	// builds are the builds asked, their contexts read into buildTars.
	builds    []images.BuildSpec
	buildTars [][]byte
	// onStart decides what a started container does; nil: it runs.
	onStart func(c *Container)
	// exec answers commands other than reading the VNC password file.
	exec func(cmd []string) (ExecResult, error)
	// execSpec, when set, answers commands instead of exec, given the
	// whole spec.
	execSpec func(spec ExecSpec) (ExecResult, error)
	logs     []string
	events   chan ContainerEvent
	now      time.Time
	// agent answers a desktop agent's requests; nil answers {}. An answer of
	// nil ends the agent's process.
	agent    func(req map[string]any) map[string]any
	sessions map[string][]*fakeSession // container ID -> its attached execs
	// disk is what DiskUsage answers for a container; specs are the
	// containers' creation specs.
	disk  map[string]int64
	specs map[string]ContainerSpec
	// onDiskUsage, if set, runs in each DiskUsage, outside the lock.
	onDiskUsage func()
	// diskHangs makes DiskUsage wait for its context to end, as an
	// engine walking a huge layer does.
	diskHangs bool
	// inspectHangs names the containers whose inspect waits for its
	// context to end, as a wedged container's does (docs/sandbox.md, Pause).
	inspectHangs map[string]bool
	// heldNames are names held by no container, as while Docker undoes a
	// create whose client went away: the next creates with the name fail
	// with a conflict, this many times.
	heldNames map[string]int
}

func newFakeDocker() *fakeDocker {
	return &fakeDocker{
		containers: map[string]*Container{},
		files:      map[string]map[string]string{},
		images:     map[string]map[string]string{},
		nextPort:   32768,
		calls:      map[string]int{},
		heldNames:  map[string]int{},
		disk:       map[string]int64{},
		specs:      map[string]ContainerSpec{},
		now:        time.Unix(1_700_000_000, 0),
	}
}

var _ Docker = (*fakeDocker)(nil)

func (f *fakeDocker) enter(call string) error {
	f.mu.Lock()
	f.calls[call]++
	return f.down
}

func (f *fakeDocker) count(call string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[call]
}

func (f *fakeDocker) setDown(err error) {
	f.mu.Lock()
	f.down = err
	f.mu.Unlock()
}

func (f *fakeDocker) lookup(idOrName string) *Container {
	if c, ok := f.containers[idOrName]; ok {
		return c
	}
	for _, c := range f.containers {
		if c.Name == idOrName {
			return c
		}
	}
	return nil
}

func (f *fakeDocker) Info(ctx context.Context) (EngineInfo, error) {
	defer f.mu.Unlock()
	if err := f.enter("Info"); err != nil {
		return EngineInfo{Endpoint: "fake://"}, err
	}
	return EngineInfo{Endpoint: "fake://", Version: "0.0-fake", APIVersion: "1.41"}, nil
}

func (f *fakeDocker) ImageLabels(ctx context.Context, ref string) (map[string]string, error) {
	defer f.mu.Unlock()
	if err := f.enter("ImageLabels"); err != nil {
		return nil, err
	}
	labels, ok := f.images[ref]
	if !ok {
		return nil, ErrImageNotFound
	}
	return maps.Clone(labels), nil
}

func (f *fakeDocker) BuildImage(ctx context.Context, spec images.BuildSpec) error {
	f.mu.Lock()
	f.calls["BuildImage"]++
	down, buildErr, lines := f.down, f.buildErr, f.buildLines
	f.mu.Unlock()
	if down != nil {
		return down
	}
	tarball, _ := io.ReadAll(spec.Context)
	f.mu.Lock()
	f.builds = append(f.builds, spec)
	f.buildTars = append(f.buildTars, tarball)
	f.mu.Unlock()
	for _, l := range lines {
		if spec.Output != nil {
			spec.Output(l)
		}
	}
	if buildErr != nil {
		return buildErr
	}
	f.mu.Lock()
	f.images[spec.Tag] = maps.Clone(spec.Labels)
	f.mu.Unlock()
	return nil
}

// PullImage fetches an image the fake registry holds, reporting its one
// layer's download in two steps, as the engine reports a layer's.
func (f *fakeDocker) PullImage(ctx context.Context, ref string, progress func(images.PullProgress)) error {
	f.mu.Lock()
	f.calls["PullImage"]++
	down, labels, ok := f.down, f.registry[ref], false
	if labels != nil {
		ok = true
	}
	f.mu.Unlock()
	if down != nil {
		return down
	}
	if !ok {
		return fmt.Errorf("manifest for %s not found: manifest unknown", ref)
	}
	progress(images.PullProgress{Status: "Downloading", Current: 10, Total: 20})
	progress(images.PullProgress{Status: "Download complete", Current: 20, Total: 20})
	f.mu.Lock()
	f.images[ref] = maps.Clone(labels)
	f.mu.Unlock()
	return nil
}

func (f *fakeDocker) Capacity(ctx context.Context) (Capacity, error) {
	defer f.mu.Unlock()
	if err := f.enter("Capacity"); err != nil {
		return Capacity{}, err
	}
	if f.capacity == (Capacity{}) {
		return Capacity{CPUs: 8, MemoryBytes: 32 << 30}, nil
	}
	return f.capacity, nil
}

func (f *fakeDocker) UpdateLimits(ctx context.Context, id string, limits Limits) error {
	defer f.mu.Unlock()
	if err := f.enter("UpdateLimits"); err != nil {
		return err
	}
	c := f.lookup(id)
	if c == nil {
		return ErrContainerNotFound
	}
	limits.ShmBytes = c.Limits.ShmBytes
	c.Limits = limits
	return nil
}

func (f *fakeDocker) CreateContainer(ctx context.Context, spec ContainerSpec) (string, error) {
	defer f.mu.Unlock()
	if err := f.enter("CreateContainer"); err != nil {
		return "", err
	}
	if f.lookup(spec.Name) != nil {
		return "", ErrNameConflict
	}
	if f.heldNames[spec.Name] > 0 {
		f.heldNames[spec.Name]--
		return "", ErrNameConflict
	}
	if _, ok := f.images[spec.Image]; !ok {
		return "", fmt.Errorf("no such image %s", spec.Image)
	}
	f.nextID++
	id := fmt.Sprintf("%064x", f.nextID)
	// The real engine merges the image's labels into the container's;
	// images of the current Dockerfile name where the passwords go.
	labels := maps.Clone(spec.Labels)
	labels[images.LabelVNCDir] = "/etc/pilot-sandbox/vnc"
	f.containers[id] = &Container{
		ID: id, Name: spec.Name, Image: spec.Image, Labels: labels,
		State: "created", Env: append([]string(nil), spec.Env...), CreatedAt: f.now, Ports: map[int]int{},
		Limits: spec.Limits, NoNetwork: spec.NoNetwork,
	}
	f.specs[id] = spec
	return id, nil
}

func (f *fakeDocker) CopyTo(ctx context.Context, id, dir string, archive io.Reader) error {
	defer f.mu.Unlock()
	if err := f.enter("CopyTo"); err != nil {
		return err
	}
	if f.lookup(id) == nil {
		return ErrContainerNotFound
	}
	tr := tar.NewReader(archive)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		data, _ := io.ReadAll(tr)
		if f.files[id] == nil {
			f.files[id] = map[string]string{}
		}
		f.files[id][dir+"/"+hdr.Name] = string(data)
	}
}

func (f *fakeDocker) StartContainer(ctx context.Context, id string) error {
	f.mu.Lock()
	f.calls["StartContainer"]++
	if f.down != nil {
		f.mu.Unlock()
		return f.down
	}
	c := f.lookup(id)
	if c == nil {
		f.mu.Unlock()
		return ErrContainerNotFound
	}
	if len(f.startErrs) > 0 {
		err := f.startErrs[0]
		f.startErrs = f.startErrs[1:]
		f.mu.Unlock()
		return err
	}
	// Every start is a new run, with its own start time.
	c.Running, c.State, c.ExitCode = true, "running", 0
	c.StartedAt = f.now.Add(time.Duration(f.calls["StartContainer"]) * time.Second)
	c.Ports = map[int]int{desktop.VNCPort: f.nextPort, desktop.NoVNCPort: f.nextPort + 1}
	if spec, made := f.specs[id]; c.NoNetwork || (made && len(spec.Ports) == 0) {
		c.Ports = map[int]int{} // the engine publishes no port of such a container
	}
	f.nextPort += 2
	onStart := f.onStart
	f.mu.Unlock()
	if onStart != nil {
		f.mu.Lock()
		onStart(c)
		f.mu.Unlock()
	}
	return nil
}

func (f *fakeDocker) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	defer f.mu.Unlock()
	if err := f.enter("StopContainer"); err != nil {
		return err
	}
	c := f.lookup(id)
	if c == nil {
		return ErrContainerNotFound
	}
	if c.Running {
		c.Running, c.State, c.ExitCode, c.Ports = false, "exited", 0, map[int]int{}
	}
	return nil
}

// PauseContainer and UnpauseContainer refuse what the engine refuses: a
// container that is not running, or not paused, or already paused.
func (f *fakeDocker) PauseContainer(ctx context.Context, id string) error {
	return f.setPaused("PauseContainer", id, "running", "paused")
}

func (f *fakeDocker) UnpauseContainer(ctx context.Context, id string) error {
	return f.setPaused("UnpauseContainer", id, "paused", "running")
}

func (f *fakeDocker) setPaused(call, id, from, to string) error {
	defer f.mu.Unlock()
	if err := f.enter(call); err != nil {
		return err
	}
	c := f.lookup(id)
	switch {
	case c == nil:
		return ErrContainerNotFound
	case !c.Running || c.State != from:
		return fmt.Errorf("container %s is %s, not %s", id, c.State, from)
	}
	c.State = to
	return nil
}

// MemoryUsage answers memory, whatever the container.
func (f *fakeDocker) MemoryUsage(ctx context.Context, id string) (int64, error) {
	defer f.mu.Unlock()
	if err := f.enter("MemoryUsage"); err != nil {
		return 0, err
	}
	if f.lookup(id) == nil {
		return 0, ErrContainerNotFound
	}
	return fakeMemory, nil
}

// fakeMemory is what the fake's MemoryUsage answers.
const fakeMemory = 123 << 20

func (f *fakeDocker) ImageTags(ctx context.Context, label, value string) ([]string, error) {
	defer f.mu.Unlock()
	if err := f.enter("ImageTags"); err != nil {
		return nil, err
	}
	var tags []string
	for tag, labels := range f.images {
		if labels[label] == value {
			tags = append(tags, tag)
		}
	}
	slices.Sort(tags)
	return tags, nil
}

func (f *fakeDocker) RemoveImage(ctx context.Context, ref string) error {
	defer f.mu.Unlock()
	if err := f.enter("RemoveImage"); err != nil {
		return err
	}
	if _, ok := f.images[ref]; !ok {
		return ErrImageNotFound
	}
	delete(f.images, ref)
	return nil
}

func (f *fakeDocker) RemoveContainer(ctx context.Context, id string) error {
	defer f.mu.Unlock()
	if err := f.enter("RemoveContainer"); err != nil {
		return err
	}
	c := f.lookup(id)
	if c == nil {
		return ErrContainerNotFound
	}
	delete(f.containers, c.ID)
	return nil
}

func (f *fakeDocker) InspectContainer(ctx context.Context, idOrName string) (Container, error) {
	f.mu.Lock()
	hangs := f.inspectHangs[idOrName]
	f.mu.Unlock()
	if hangs {
		<-ctx.Done()
		return Container{}, fmt.Errorf("%w: %v", ErrTimeout, ctx.Err())
	}
	defer f.mu.Unlock()
	if err := f.enter("InspectContainer"); err != nil {
		return Container{}, err
	}
	c := f.lookup(idOrName)
	if c == nil {
		return Container{}, fmt.Errorf("%w: %s", ErrContainerNotFound, idOrName)
	}
	cp := *c
	cp.Ports = maps.Clone(c.Ports)
	return cp, nil
}

func (f *fakeDocker) ListContainers(ctx context.Context, labels map[string]string) ([]Container, error) {
	defer f.mu.Unlock()
	if err := f.enter("ListContainers"); err != nil {
		return nil, err
	}
	var out []Container
	for _, c := range f.containers {
		match := true
		for k, v := range labels {
			match = match && c.Labels[k] == v
		}
		if match {
			cp := *c
			cp.Ports = maps.Clone(c.Ports)
			out = append(out, cp)
		}
	}
	return out, nil
}

func (f *fakeDocker) Exec(ctx context.Context, id string, spec ExecSpec) (ExecResult, error) {
	f.mu.Lock()
	f.calls["Exec"]++
	if f.down != nil {
		defer f.mu.Unlock()
		return ExecResult{}, f.down
	}
	c := f.lookup(id)
	switch {
	case c == nil:
		f.mu.Unlock()
		return ExecResult{}, ErrContainerNotFound
	case !c.Running:
		f.mu.Unlock()
		return ExecResult{}, fmt.Errorf("%w: container %s is not running", ErrNotRunning, id)
	}
	if len(spec.Cmd) == 2 && spec.Cmd[0] == "cat" && strings.HasSuffix(spec.Cmd[1], "/passwd") {
		defer f.mu.Unlock()
		content, ok := f.files[c.ID][spec.Cmd[1]]
		if !ok {
			return ExecResult{ExitCode: 1, Stderr: []byte("No such file")}, nil
		}
		return ExecResult{Stdout: []byte(content)}, nil
	}
	exec, execSpec := f.exec, f.execSpec
	f.mu.Unlock()
	if execSpec != nil {
		return execSpec(spec)
	}
	if exec == nil {
		return ExecResult{}, nil
	}
	res, err := exec(spec.Cmd)
	// With sinks, the output goes to them, as the engine does it.
	if spec.Stdout != nil {
		spec.Stdout.Write(res.Stdout)
		spec.Stderr.Write(res.Stderr)
		res.Stdout, res.Stderr = nil, nil
	}
	return res, err
}

func (f *fakeDocker) ExecAttach(ctx context.Context, id string, spec ExecSpec) (ExecSession, error) {
	f.mu.Lock()
	f.calls["ExecAttach"]++
	c, handler := f.lookup(id), f.agent
	f.mu.Unlock()
	if c == nil || !c.Running {
		return nil, fmt.Errorf("%w: %s", ErrNotRunning, id)
	}
	if handler == nil {
		handler = func(map[string]any) map[string]any { return map[string]any{} }
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		defer outW.Close()
		dec := json.NewDecoder(inR)
		for {
			var req map[string]any
			if dec.Decode(&req) != nil {
				return
			}
			resp := handler(req)
			if resp == nil {
				inR.CloseWithError(io.EOF)
				return
			}
			resp["id"] = req["id"]
			line, _ := json.Marshal(resp)
			if _, err := outW.Write(append(line, '\n')); err != nil {
				return
			}
		}
	}()
	fs := &fakeSession{Reader: outR, in: inW, out: outR}
	f.mu.Lock()
	if f.sessions == nil {
		f.sessions = map[string][]*fakeSession{}
	}
	f.sessions[c.ID] = append(f.sessions[c.ID], fs)
	f.mu.Unlock()
	return fs, nil
}

type fakeSession struct {
	io.Reader
	in  *io.PipeWriter
	out *io.PipeReader
}

func (s *fakeSession) Write(p []byte) (int, error) { return s.in.Write(p) }
func (s *fakeSession) Close() error                { s.in.Close(); s.out.Close(); return nil }
func (s *fakeSession) Stderr() string              { return "Traceback: fake agent died" }

func (f *fakeDocker) DiskUsage(ctx context.Context, id string) (int64, error) {
	f.mu.Lock()
	hook, hangs := f.onDiskUsage, f.diskHangs
	f.mu.Unlock()
	if hook != nil {
		hook()
	}
	if hangs {
		f.mu.Lock()
		f.calls["DiskUsage"]++
		f.mu.Unlock()
		<-ctx.Done()
		return 0, ctx.Err()
	}
	defer f.mu.Unlock()
	if err := f.enter("DiskUsage"); err != nil {
		return 0, err
	}
	if f.lookup(id) == nil {
		return 0, ErrContainerNotFound
	}
	return f.disk[id], nil
}

func (f *fakeDocker) setDisk(id string, n int64) {
	f.mu.Lock()
	f.disk[id] = n
	f.mu.Unlock()
}

func (f *fakeDocker) Logs(ctx context.Context, id string, lines int) ([]string, error) {
	defer f.mu.Unlock()
	if err := f.enter("Logs"); err != nil {
		return nil, err
	}
	return append([]string(nil), f.logs...), nil
}

func (f *fakeDocker) Events(ctx context.Context, labels map[string]string) (<-chan ContainerEvent, error) {
	defer f.mu.Unlock()
	if err := f.enter("Events"); err != nil {
		return nil, err
	}
	if f.events == nil {
		return nil, errors.New("fake: no event stream")
	}
	return f.events, nil
}

// addContainer puts a sandbox container for project on the fake engine, as
// if an earlier sidecar had made it.
func (f *fakeDocker) addContainer(project string, running bool, exitCode int, secret desktop.Secret) *Container {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	id := fmt.Sprintf("%064x", f.nextID)
	c := &Container{
		ID: id, Name: ContainerName(project), Image: images.DefaultTag, Labels: projectLabels(DefaultScope, "", project),
		State: "exited", ExitCode: exitCode, CreatedAt: f.now, Ports: map[int]int{},
		Env: []string{"RESOLUTION=1024x768x24"},
	}
	if running {
		c.Running, c.State = true, "running"
		c.Ports = map[int]int{desktop.VNCPort: f.nextPort, desktop.NoVNCPort: f.nextPort + 1}
		f.nextPort += 2
	}
	f.containers[id] = c
	// An earlier sidecar's container: an image without images.LabelVNCDir.
	f.files[id] = map[string]string{desktop.LegacyVNCDir + "/passwd": string(secret.PasswdFile())}
	return c
}

// kill makes a container die behind the manager's back, with the processes
// attached to it.
func (f *fakeDocker) kill(id string, exitCode int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	c.Running, c.State, c.ExitCode, c.Ports = false, "exited", exitCode, map[int]int{}
	for _, s := range f.sessions[id] {
		s.out.CloseWithError(io.EOF)
	}
	delete(f.sessions, id)
}

func (f *fakeDocker) remove(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.containers, id)
}

func (f *fakeDocker) uploaded(id, path string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.files[id][path]
}

// errFakeDown is what the fake answers when the engine is "down".
var errFakeDown = &UnavailableError{Endpoint: "fake://", Err: errors.New("connection refused")}

func hasLine(lines []string, part string) bool {
	for _, l := range lines {
		if strings.Contains(l, part) {
			return true
		}
	}
	return false
}
