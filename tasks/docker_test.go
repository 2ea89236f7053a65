package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/testlog"
	"github.com/pilot-sandbox/pilot-sandbox/resources"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tasks"
	"github.com/pilot-sandbox/pilot-sandbox/workspace"
)

// env is a real sandbox with a task manager, which hears every event.
type env struct {
	t        testing.TB
	m        *service.Manager
	project  string
	stateDir string
	tasks    *tasks.Manager

	mu     sync.Mutex // guards heard
	heard  []tasks.Notification
	change chan struct{} // a notification came
}

func newEnv(t testing.TB, change func(*service.Config)) *env {
	t.Helper()
	return newEnvWith(t, change, "")
}

// newEnvWith is newEnv with the project's .pilot/settings.json (if any).
func newEnvWith(t testing.TB, change func(*service.Config), settings string) *env {
	t.Helper()
	m, docker := dockertest.Manager(t, change)
	project := dockertest.Project(t, docker)
	if settings != "" {
		write(t, project, ".pilot/settings.json", settings)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := m.Start(ctx, project); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, m: m, project: project, stateDir: t.TempDir(), change: make(chan struct{}, 1)}
	e.tasks = e.manager()
	t.Cleanup(func() { e.tasks.Close() })
	return e
}

// manager is a task manager of this sidecar's state (a new one stands for
// a sidecar that restarted).
func (e *env) manager() *tasks.Manager {
	m := tasks.New(dockertest.Sandboxes{M: e.m}, tasks.Options{
		Runner:    resources.TaskRunner(),
		Workspace: workspace.Options{Program: resources.WorkspaceProgram(), StateDir: e.stateDir},
		Logger:    testlog.New(e.t),
	})
	m.Listen(e.hear)
	return m
}

func (e *env) hear(n tasks.Notification) {
	e.mu.Lock()
	e.heard = append(e.heard, n)
	e.mu.Unlock()
	select {
	case e.change <- struct{}{}:
	default:
	}
}

// run starts a command task and returns its id.
func (e *env) run(req tasks.StartRequest) string {
	e.t.Helper()
	req.ProjectPath, req.Agent = e.project, tasks.AgentCommand
	rec, err := e.tasks.Start(context.Background(), req, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return rec.ID
}

// finished waits for the task's finished event and returns it with every
// event heard of the task, in order.
func (e *env) finished(id string, within time.Duration) (tasks.Finished, []tasks.Notification) {
	e.t.Helper()
	deadline := time.After(within)
	for {
		e.mu.Lock()
		var mine []tasks.Notification
		for _, n := range e.heard {
			if n.TaskID == id {
				mine = append(mine, n)
			}
		}
		e.mu.Unlock()
		if len(mine) > 0 && mine[len(mine)-1].Event.Type == tasks.TypeFinished {
			return *mine[len(mine)-1].Event.Body.(*tasks.Finished), mine
		}
		select {
		case <-e.change:
		case <-deadline:
			e.t.Fatalf("task %s did not finish within %s (%d events)", id, within, len(mine))
		}
	}
}

// lines are the texts of a task's line events.
func lines(ns []tasks.Notification) []string {
	var out []string
	for _, n := range ns {
		if l, ok := n.Event.Body.(*tasks.Line); ok {
			out = append(out, l.Text)
		}
	}
	return out
}

func (e *env) sh(command string) string {
	e.t.Helper()
	out, err := e.m.Exec(context.Background(), e.project, service.ExecRequest{Command: command, Timeout: time.Minute})
	if err != nil || out.ExitCode != 0 {
		e.t.Fatalf("%s: %v %+v", command, err, out)
	}
	return out.Stdout
}

func write(t testing.TB, dir, rel, content string) {
	t.Helper()
	file := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, dir, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func gitInit(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
}

// TestACommandTaskAndItsChange is the proof: a git project synced,
// a command task that edits and adds files, its events in order, its diff,
// the host untouched until apply, apply refused after a host edit (naming
// the file, writing nothing) and done once the edit is undone.
func TestACommandTaskAndItsChange(t *testing.T) {
	e := newEnv(t, nil)
	write(t, e.project, "main.go", "package main\n")
	write(t, e.project, "README.md", "# demo\n")
	gitInit(t, e.project)
	id := e.run(tasks.StartRequest{Command: []string{"sh", "-c",
		"echo begin; printf 'package main\\n\\nfunc main() {}\\n' > main.go; mkdir -p lib && echo 'package lib' > lib/lib.go; echo done >&2"}})
	fin, events := e.finished(id, time.Minute)
	if fin.Status != tasks.StatusSucceeded || fin.ExitCode != 0 || fin.Commit == "" {
		t.Fatalf("finished %+v", fin)
	}
	var types []string
	for i, n := range events {
		if n.Seq != i+1 {
			t.Errorf("event %d has seq %d", i, n.Seq)
		}
		types = append(types, n.Event.Type)
	}
	if got := strings.Join(types, " "); got != "started line line finished" || strings.Join(lines(events), ",") != "begin,done" {
		t.Errorf("events %s, lines %q", got, lines(events))
	}
	ctx := context.Background()
	d, err := e.tasks.Diff(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 2 || !strings.Contains(d.Patch, "+func main() {}") {
		t.Errorf("diff %+v", d)
	}
	if read(t, e.project, "main.go") != "package main\n" {
		t.Fatal("the task changed the host")
	}
	write(t, e.project, "main.go", "package main // the user's edit\n")
	_, err = e.tasks.Apply(ctx, id, nil)
	var conflict *workspace.ConflictError
	if !errors.As(err, &conflict) || strings.Join(conflict.Paths, ",") != "main.go" {
		t.Fatalf("apply over a host edit: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.project, "lib")); err == nil {
		t.Fatal("a refused apply wrote lib/")
	}
	write(t, e.project, "main.go", "package main\n")
	if _, err := e.tasks.Apply(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	if read(t, e.project, "main.go") != "package main\n\nfunc main() {}\n" || read(t, e.project, "lib/lib.go") != "package lib\n" {
		t.Error("the host does not have the task's change")
	}
	got, err := e.tasks.Get(ctx, id)
	if err != nil || got.Task.Status != tasks.StatusSucceeded || len(got.Events) != 4 {
		t.Errorf("get: %+v %v", got, err)
	}
}

// TestCancelEndsEveryProcess: a task whose children sleep, one of them
// forked twice into a session of its own and deaf to SIGTERM, ends with
// all of them.
func TestCancelEndsEveryProcess(t *testing.T) {
	e := newEnv(t, nil)
	script := "import os, signal, time\n" +
		"if os.fork() == 0:\n" +
		"    os.setsid()\n" +
		"    if os.fork() == 0:\n" +
		"        signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" +
		"        os.write(1, b'stubborn %d\\n' % os.getpid())\n" +
		"        time.sleep(600)\n" +
		"    os._exit(0)\n" +
		"os.system('sleep 600 & echo child $!')\n" +
		"time.sleep(600)\n"
	id := e.run(tasks.StartRequest{Command: []string{"python3", "-c", script}})
	waitLines(t, e, id, 2)
	rec, err := e.tasks.Cancel(context.Background(), id)
	if err != nil || rec.Status != tasks.StatusCancelled {
		t.Fatalf("cancel: %+v %v", rec, err)
	}
	fin, events := e.finished(id, time.Minute)
	if fin.Status != tasks.StatusCancelled {
		t.Errorf("finished %+v", fin)
	}
	for _, l := range lines(events) {
		pid := strings.Fields(l)[1]
		if out := e.sh("ps -o pid= -p " + pid + " || true"); strings.TrimSpace(out) != "" {
			t.Errorf("process %s (%s) outlived the cancel", pid, l)
		}
	}
}

// waitLines waits until the task printed n lines.
func waitLines(t *testing.T, e *env, id string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		got, _ := e.tasks.Get(context.Background(), id)
		count := 0
		for _, ev := range got.Events {
			if ev.Type == tasks.TypeLine {
				count++
			}
		}
		if count >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("task %s did not print %d lines", id, n)
}

func TestATaskTimesOut(t *testing.T) {
	e := newEnv(t, nil)
	id := e.run(tasks.StartRequest{Command: []string{"sleep", "600"}, Timeout: 2 * time.Second})
	fin, _ := e.finished(id, time.Minute)
	if fin.Status != tasks.StatusTimedOut {
		t.Errorf("finished %+v", fin)
	}
}

// TestOneTaskAtATime: a second task, and a sync, wait for the first.
func TestOneTaskAtATime(t *testing.T) {
	e := newEnv(t, nil)
	id := e.run(tasks.StartRequest{Command: []string{"sleep", "600"}})
	ctx := context.Background()
	if _, err := e.tasks.Start(ctx, tasks.StartRequest{ProjectPath: e.project, Agent: tasks.AgentCommand, Command: []string{"true"}, NoSync: true}, nil); !errors.Is(err, tasks.ErrBusy) {
		t.Errorf("a second task: %v", err)
	}
	if _, err := e.tasks.Sync(ctx, e.project, nil); !errors.Is(err, tasks.ErrBusy) {
		t.Errorf("a sync under a task: %v", err)
	}
	e.tasks.Cancel(ctx, id)
}

// TestASidecarRestartDuringATask: the task goes on; the next sidecar
// follows it to its end and has all its events, numbered as before.
func TestASidecarRestartDuringATask(t *testing.T) {
	e := newEnv(t, nil)
	id := e.run(tasks.StartRequest{Command: []string{"sh", "-c", "echo before; sleep 3; echo after"}})
	waitLines(t, e, id, 1)
	e.tasks.Close()
	next := e.manager()
	defer next.Close()
	next.Reattach(context.Background())
	fin, events := e.finished(id, time.Minute)
	if fin.Status != tasks.StatusSucceeded {
		t.Fatalf("finished %+v", fin)
	}
	seen := map[int]string{}
	for _, n := range events {
		if prev, ok := seen[n.Seq]; ok && prev != n.Event.Type {
			t.Errorf("seq %d is %s, and %s after the restart", n.Seq, prev, n.Event.Type)
		}
		seen[n.Seq] = n.Event.Type
	}
	got, err := next.Get(context.Background(), id)
	if err != nil || strings.Join(lines(asNotifications(got.Events)), ",") != "before,after" {
		t.Errorf("the next sidecar's events: %+v %v", got.Events, err)
	}
}

func asNotifications(evs []tasks.Event) []tasks.Notification {
	out := make([]tasks.Notification, len(evs))
	for i, ev := range evs {
		out[i].Event = ev
	}
	return out
}

// TestATaskWhoseSandboxStoppedIsLost: the next sidecar finds the task in
// its state and reports it lost.
func TestATaskWhoseSandboxStoppedIsLost(t *testing.T) {
	e := newEnv(t, nil)
	id := e.run(tasks.StartRequest{Command: []string{"sleep", "600"}})
	e.tasks.Close()
	if _, err := e.m.Stop(context.Background(), e.project); err != nil {
		t.Fatal(err)
	}
	next := e.manager()
	defer next.Close()
	next.Reattach(context.Background())
	fin, heard := e.finished(id, time.Minute)
	if last := heard[len(heard)-1]; fin.Status != tasks.StatusLost || last.Seq != 2 {
		// Numbered after the first sidecar's started (1), which the next
		// one did not read again: the sandbox is gone.
		t.Errorf("finished %+v, seq %d", fin, last.Seq)
	}
	list, _ := next.List(e.project)
	if len(list) != 1 || list[0].Status != tasks.StatusLost {
		t.Errorf("list %+v", list)
	}
}

// TestAFloodIsBounded: 300,000 lines in a second or two; the events stop
// at the runner's bound, the rest is counted, memory keeps the last.
func TestAFloodIsBounded(t *testing.T) {
	e := newEnv(t, nil)
	id := e.run(tasks.StartRequest{Command: []string{"sh", "-c", "seq 1 300000"}})
	fin, events := e.finished(id, 3*time.Minute)
	if fin.Status != tasks.StatusSucceeded || fin.DroppedLines != 200000 {
		t.Errorf("finished %+v", fin)
	}
	if len(events) > 100010 {
		t.Errorf("%d events for a flood", len(events))
	}
	got, _ := e.tasks.Get(context.Background(), id)
	if len(got.Events) > 5000 || got.Dropped == 0 {
		t.Errorf("kept %d events, dropped %d", len(got.Events), got.Dropped)
	}
	raw, _ := json.Marshal(got.Events[len(got.Events)-1])
	if !strings.Contains(string(raw), `"finished"`) {
		t.Errorf("the last event kept is %s", raw)
	}
}

// TestATaskServesAPageInTheBrowser: a task starts a server in /workspace
// and opens its page with pilot-open in the sandbox's Chromium (browser
// image); the page loads there, and the server outlives the task.
func TestATaskServesAPageInTheBrowser(t *testing.T) {
	e := newEnv(t, func(cfg *service.Config) { cfg.DefaultVariant = images.VariantBrowser })
	write(t, e.project, "site/index.html", "<html><head><title>Built by the task</title></head><body>hello</body></html>\n")
	id := e.run(tasks.StartRequest{Command: []string{"sh", "-c",
		"cd site && python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 & " +
			"for i in $(seq 50); do python3 -c 'import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:8765/\")' 2>/dev/null && break; sleep 0.1; done; " +
			"pilot-open http://127.0.0.1:8765/index.html && echo opened"}})
	fin, events := e.finished(id, 2*time.Minute)
	if fin.Status != tasks.StatusSucceeded || !slices.Contains(lines(events), "opened") {
		t.Fatalf("finished %+v, lines %q", fin, lines(events))
	}
	dockertest.PollExec(t, e.m, e.project, "the page is open in Chromium",
		`python3 -c 'import urllib.request, sys; sys.exit("Built by the task" not in urllib.request.urlopen("http://127.0.0.1:9222/json/list").read().decode())'`)
}

// TestApplyRefusesOnTheEngine: the refusals of apply with a real sandbox
// and its git: a link the task made that leads out of the project, a
// host link on the way to a changed file, a read-only project and one that
// moved; each a clear error, nothing written.
func TestApplyRefusesOnTheEngine(t *testing.T) {
	e := newEnv(t, nil)
	write(t, e.project, "src/main.go", "package main\n")
	ctx := context.Background()
	run := func(script string) string {
		t.Helper()
		id := e.run(tasks.StartRequest{Command: []string{"sh", "-c", script}})
		if fin, _ := e.finished(id, time.Minute); fin.Status != tasks.StatusSucceeded {
			t.Fatalf("task: %+v", fin)
		}
		return id
	}
	refused := func(what, id string, want error) {
		t.Helper()
		if _, err := e.tasks.Apply(ctx, id, nil); !errors.Is(err, want) {
			t.Errorf("%s: %v; want %v", what, err, want)
		}
	}
	out := run("ln -s /etc/passwd passwd && ln -s ../../../home src/up")
	refused("links out of the project", out, workspace.ErrUnsafe)
	if _, err := os.Lstat(filepath.Join(e.project, "passwd")); err == nil {
		t.Error("a refused apply made a link")
	}

	edit := run("echo 'package main // task' > src/main.go && echo new > src/new.go")
	outside := t.TempDir()
	write(t, outside, "main.go", "package main\n")
	os.Rename(filepath.Join(e.project, "src"), filepath.Join(e.project, "src.moved"))
	os.Symlink(outside, filepath.Join(e.project, "src"))
	refused("a host link on the way", edit, workspace.ErrUnsafe)
	if read(t, outside, "main.go") != "package main\n" {
		t.Error("apply wrote through the host's link")
	}
	os.Remove(filepath.Join(e.project, "src"))
	os.Rename(filepath.Join(e.project, "src.moved"), filepath.Join(e.project, "src"))

	lockDir(t, filepath.Join(e.project, "src"))
	if _, err := e.tasks.Apply(ctx, edit, nil); err == nil || !strings.Contains(err.Error(), "nothing was written") {
		t.Errorf("a read-only project: %v", err)
	}
	unlockDir(filepath.Join(e.project, "src"))
	if read(t, e.project, "src/main.go") != "package main\n" {
		t.Error("a refused apply wrote src/main.go")
	}
	moved := e.project + "-moved"
	if err := os.Rename(e.project, moved); err != nil {
		t.Fatal(err)
	}
	defer os.Rename(moved, e.project)
	if _, err := e.tasks.Apply(ctx, edit, nil); err == nil || !strings.Contains(err.Error(), "moved or removed") {
		t.Errorf("a moved project: %v", err)
	}
}

// lockDir makes dir unwritable, for root too (the immutable attribute).
func lockDir(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		os.Chmod(dir, 0o555)
		return
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("as root, a read-only directory needs chattr +i: %v %s", err, out)
	}
	t.Cleanup(func() { unlockDir(dir) })
}

func unlockDir(dir string) {
	if os.Geteuid() == 0 {
		exec.Command("chattr", "-i", dir).Run()
	} else {
		os.Chmod(dir, 0o755)
	}
}

// TestADevSandboxBuildsInside: in the dev image a task has Node.js with
// npm, Python with venv and pip, make and a C compiler, and git.
func TestADevSandboxBuildsInside(t *testing.T) {
	e := newEnvWith(t, nil, `{"sandbox": {"image": "dev"}}`)
	write(t, e.project, "hello.c", "#include <stdio.h>\nint main(void) { puts(\"hello from C\"); return 0; }\n")
	write(t, e.project, "Makefile", "hello: hello.c\n\tcc -o hello hello.c\n")
	id := e.run(tasks.StartRequest{Command: []string{"sh", "-c",
		"make -s hello && ./hello && node -e 'console.log(\"node \" + process.version)' && npm --version >/dev/null && " +
			"python3 -m venv /tmp/venv && /tmp/venv/bin/pip --version >/dev/null && echo venv ok && git --version >/dev/null && curl --version >/dev/null && echo tools ok"}})
	fin, events := e.finished(id, 2*time.Minute)
	got := strings.Join(lines(events), "\n")
	if fin.Status != tasks.StatusSucceeded || !strings.Contains(got, "hello from C") || !strings.Contains(got, "node v") || !strings.Contains(got, "tools ok") {
		t.Fatalf("finished %+v:\n%s", fin, got)
	}
	if st, _ := e.m.Status(context.Background(), e.project); st.ImageVariant != images.VariantDev {
		t.Errorf("the sandbox runs %q", st.ImageVariant)
	}
}
