package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// fakeSandbox is a tools.Sandbox with a small display, whose starts wait
// for hold to be closed when it is set, and which tells its subscribers
// how a start goes.
type fakeSandbox struct {
	display desktop.Display

	mu        sync.Mutex // guards the fields below
	running   bool
	hold      chan struct{} // nil: starts do not wait
	cancelled chan struct{} // closed when a held start saw its context end
	calls     []string
	subs      []chan service.Event
	pointer   image.Point // where the last action left the pointer
	shot      []byte      // when set, the PNG every screenshot answers
}

// moved records where an action left the pointer.
func (f *fakeSandbox) moved(x, y int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pointer = image.Pt(x, y)
}

func newFake() *fakeSandbox {
	return &fakeSandbox{display: desktop.Display{Width: 32, Height: 20}, cancelled: make(chan struct{})}
}

func (f *fakeSandbox) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakeSandbox) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeSandbox) Start(ctx context.Context, p string) (service.State, error) {
	f.record("start")
	f.publish(p, service.StageImage, "Step 1/2 : FROM debian")
	f.mu.Lock()
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			close(f.cancelled)
			return service.State{}, ctx.Err()
		}
	}
	f.publish(p, service.StageReady, "The desktop is ready")
	f.mu.Lock()
	f.running = true
	f.mu.Unlock()
	return service.State{Status: service.StatusRunning, Display: f.display}, nil
}

func (f *fakeSandbox) Stop(ctx context.Context, p string) (service.State, error) {
	f.record("stop")
	f.mu.Lock()
	f.running = false
	f.mu.Unlock()
	return service.State{Status: service.StatusStopped}, nil
}

func (f *fakeSandbox) Exec(ctx context.Context, p string, r service.ExecRequest) (service.ExecOutput, error) {
	f.record("exec " + r.Command)
	return service.ExecOutput{Stdout: "ran " + r.Command + "\n"}, nil
}

func (f *fakeSandbox) ExecArgv(ctx context.Context, p string, spec service.ExecSpec) (service.ExecResult, error) {
	f.record("execargv")
	return service.ExecResult{}, nil
}

func (f *fakeSandbox) Desktop(ctx context.Context, p string) (tools.Desktop, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.running {
		return nil, service.ErrNotRunning
	}
	return fakeDesktop{f}, nil
}

func (f *fakeSandbox) Subscribe() (<-chan service.Event, func()) {
	ch := make(chan service.Event, 16)
	f.mu.Lock()
	f.subs = append(f.subs, ch)
	f.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			for i, c := range f.subs {
				if c == ch {
					f.subs = append(f.subs[:i], f.subs[i+1:]...)
				}
			}
			close(ch)
		})
	}
}

func (f *fakeSandbox) publish(project, stage, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.subs {
		ch <- service.Event{Kind: service.EventProgress, Project: project,
			Progress: service.Progress{ProjectPath: project, Stage: stage, Message: msg}}
	}
}

type fakeDesktop struct{ f *fakeSandbox }

func (d fakeDesktop) Display() desktop.Display { return d.f.display }
func (d fakeDesktop) Move(ctx context.Context, x, y int) error {
	d.f.record(fmt.Sprintf("move %d %d", x, y))
	d.f.moved(x, y)
	return nil
}
func (d fakeDesktop) Click(ctx context.Context, x, y, button, count int, modifiers ...string) error {
	d.f.record(fmt.Sprintf("click %d %d %d %d", x, y, button, count))
	d.f.moved(x, y)
	return nil
}
func (d fakeDesktop) Drag(ctx context.Context, g desktop.Drag) error {
	d.f.record(fmt.Sprintf("drag %+v", g))
	return nil
}
func (d fakeDesktop) Scroll(ctx context.Context, x, y int, dir string, n int, modifiers ...string) error {
	d.f.record(fmt.Sprintf("scroll %d %d %s %d", x, y, dir, n))
	d.f.moved(x, y)
	return nil
}
func (d fakeDesktop) Pointer(ctx context.Context) (image.Point, error) {
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	return d.f.pointer, nil
}
func (d fakeDesktop) HoldKeys(ctx context.Context, combo string, hold time.Duration) error {
	d.f.record("hold " + combo)
	return nil
}
func (d fakeDesktop) ScreenshotRegion(ctx context.Context, r image.Rectangle) (desktop.Screenshot, error) {
	return d.Screenshot(ctx)
}
func (d fakeDesktop) Type(ctx context.Context, text string) error {
	d.f.record("type " + text)
	return nil
}
func (d fakeDesktop) TypeInto(ctx context.Context, ref, text string) error {
	d.f.record("type into " + ref + " " + text)
	return nil
}
func (d fakeDesktop) Keys(ctx context.Context, keys string) error {
	d.f.record("key " + keys)
	return nil
}

// Screenshot is the display, black with a white top-left pixel.
func (d fakeDesktop) Screenshot(ctx context.Context) (desktop.Screenshot, error) {
	if d.f.shot != nil {
		return desktop.Screenshot{PNG: d.f.shot, Width: d.f.display.Width, Height: d.f.display.Height}, nil
	}
	img := image.NewGray(image.Rect(0, 0, d.f.display.Width, d.f.display.Height))
	img.Set(0, 0, color.White)
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return desktop.Screenshot{}, err
	}
	return desktop.Screenshot{PNG: b.Bytes(), Width: d.f.display.Width, Height: d.f.display.Height}, nil
}
func (d fakeDesktop) Clipboard(ctx context.Context) (string, bool, error) { return "", true, nil }
func (d fakeDesktop) SetClipboard(ctx context.Context, text string) error {
	d.f.record("clipboard " + text)
	return nil
}

// Perception: a screen with no tree, that nothing changes.
func (d fakeDesktop) Tree(ctx context.Context) (desktop.Tree, error) { return desktop.Tree{}, nil }
func (d fakeDesktop) Locate(ctx context.Context, ref string) (desktop.Element, error) {
	return desktop.Element{}, fmt.Errorf("%w: %s is not a ref of the latest tree", service.ErrAgent, ref)
}
func (d fakeDesktop) Focus(ctx context.Context, ref string) (desktop.Element, error) {
	return d.Locate(ctx, ref)
}
func (d fakeDesktop) Mark(ctx context.Context) error { return nil }
func (d fakeDesktop) Settle(ctx context.Context, wait, quiet, longest time.Duration) (desktop.Change, error) {
	return desktop.Change{}, nil
}
func (d fakeDesktop) Still(ctx context.Context, quiet, timeout time.Duration) (desktop.Stillness, error) {
	return desktop.Stillness{Still: true, Took: quiet}, nil
}

// fileSwitch is the switch as every process sees it: the settings file.
type fileSwitch struct{}

func (fileSwitch) ToolsEnabled(project string) (bool, error) {
	doc, err := projectfs.ReadSettings(project)
	if err != nil {
		return false, err
	}
	return doc.Bool(projectfs.ToolsKey), nil
}

// flip turns the project's switch as the app or the CLI does.
func flip(t testing.TB, project string, on bool) {
	t.Helper()
	if _, err := projectfs.WriteSettingsBool(project, projectfs.ToolsKey, on, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// served is a server on a fake sandbox, for one test, and the project it
// serves.
type served struct {
	fake    *fakeSandbox
	set     *tools.Set
	server  *Server
	project string
}

func newServed(t testing.TB, on bool, opts ...tools.Option) *served {
	t.Helper()
	project, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if on {
		flip(t, project, true)
	}
	fake := newFake()
	set := tools.For(fake, opts...)
	t.Cleanup(set.Close)
	server := New(set, fileSwitch{}, Options{Project: project, Version: "test", Log: zerolog.Nop(), Poll: 5 * time.Millisecond})
	return &served{fake: fake, set: set, server: server, project: project}
}

// connect serves one connection, and returns the client's end of it. The
// server's Run ends with the test.
func (s *served) connect(t *testing.T) mcp.Transport {
	t.Helper()
	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- s.server.Run(ctx, serverEnd) }()
	t.Cleanup(func() {
		cancel()
		// The client's end may close first at teardown: the server then
		// sees a closed pipe, which is how a connection ends.
		if err := <-ran; err != nil && !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("Run: %v", err)
		}
	})
	return clientEnd
}

// client connects the SDK's own client, with opts, at protocol version v
// ("" for the SDK's newest).
func (s *served) client(t *testing.T, opts *mcp.ClientOptions, v string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), s.connect(t), &mcp.ClientSessionOptions{ProtocolVersion: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
