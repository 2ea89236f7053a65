package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"strings"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// fakeSandbox records what the tools asked of the desktop, in display
// pixels.
type fakeSandbox struct {
	display desktop.Display
	stopped bool
	paused  bool // Desktop answers service.ErrPaused
	calls   []string
	pointer image.Point
	out     service.ExecOutput // what exec answers
	files   map[string]string  // written with ExecArgv
	// Perception: the tree the desktop reads, its elements by ref (others
	// are gone), what the screen does after an action and in a wait.
	tree     desktop.Tree
	elements map[string]desktop.Element
	change   desktop.Change
	still    desktop.Stillness
}

func (f *fakeSandbox) Start(ctx context.Context, p string) (service.State, error) {
	f.calls = append(f.calls, "start")
	return service.State{Status: service.StatusRunning, Display: f.display}, nil
}
func (f *fakeSandbox) Stop(ctx context.Context, p string) (service.State, error) {
	f.calls = append(f.calls, "stop")
	return service.State{}, nil
}
func (f *fakeSandbox) Exec(ctx context.Context, p string, r service.ExecRequest) (service.ExecOutput, error) {
	f.calls = append(f.calls, "exec "+r.Command+" "+r.Timeout.String())
	if f.out == (service.ExecOutput{}) {
		return service.ExecOutput{ExitCode: 2, Stdout: "out", Stderr: "err", TimedOut: true}, nil
	}
	return f.out, nil
}

// ExecArgv writes a file as keepExecLog asks, and nothing else.
func (f *fakeSandbox) ExecArgv(ctx context.Context, p string, spec service.ExecSpec) (service.ExecResult, error) {
	if len(spec.Cmd) != 6 || spec.Cmd[2] != `mkdir -p "$1" && cat > "$2"` || spec.Stdin == nil {
		return service.ExecResult{}, fmt.Errorf("unexpected exec %q", spec.Cmd)
	}
	data, err := io.ReadAll(spec.Stdin)
	if f.files == nil {
		f.files = map[string]string{}
	}
	f.files[spec.Cmd[5]] = string(data)
	return service.ExecResult{}, err
}

func (f *fakeSandbox) Desktop(ctx context.Context, p string) (Desktop, error) {
	if f.stopped {
		return nil, service.ErrNotRunning
	}
	if f.paused {
		return nil, service.ErrPaused
	}
	return fakeDesktop{f}, nil
}

type fakeDesktop struct{ f *fakeSandbox }

func (d fakeDesktop) log(s string) error { d.f.calls = append(d.f.calls, s); return nil }

// at logs an action at a point and leaves the pointer there.
func (d fakeDesktop) at(s string, x, y int) error {
	d.f.pointer = image.Pt(x, y)
	return d.log(s)
}

func (d fakeDesktop) Display() desktop.Display { return d.f.display }
func (d fakeDesktop) Pointer(ctx context.Context) (image.Point, error) {
	return d.f.pointer, nil
}
func (d fakeDesktop) Move(ctx context.Context, x, y int) error {
	return d.at(fmtCall("move", x, y), x, y)
}
func (d fakeDesktop) Click(ctx context.Context, x, y, b, n int, mods ...string) error {
	return d.at(fmtCall("click", x, y, b, n)+withMods(mods), x, y)
}
func (d fakeDesktop) Drag(ctx context.Context, g desktop.Drag) error {
	var flat []int
	for _, p := range g.Path {
		flat = append(flat, p.X, p.Y)
	}
	s := fmtCall("drag", flat...)
	if g.Duration > 0 {
		s += " " + g.Duration.String()
	}
	last := g.Path[len(g.Path)-1]
	return d.at(s+withMods(g.Modifiers), last.X, last.Y)
}
func (d fakeDesktop) Scroll(ctx context.Context, x, y int, dir string, n int, mods ...string) error {
	return d.at(fmtCall("scroll "+dir, x, y, n)+withMods(mods), x, y)
}
func (d fakeDesktop) Type(ctx context.Context, t string) error { return d.log("type " + t) }
func (d fakeDesktop) TypeInto(ctx context.Context, ref, t string) error {
	return d.log("type into " + ref + " " + t)
}
func (d fakeDesktop) Keys(ctx context.Context, k string) error {
	if strings.Contains(k, "Nope") {
		return &agentErr{}
	}
	return d.log("key " + k)
}
func (d fakeDesktop) HoldKeys(ctx context.Context, k string, hold time.Duration) error {
	return d.log("hold " + k + " " + hold.String())
}
func (d fakeDesktop) Screenshot(ctx context.Context) (desktop.Screenshot, error) {
	return d.ScreenshotRegion(ctx, image.Rect(0, 0, d.f.display.Width, d.f.display.Height))
}

// ScreenshotRegion is a region of a display whose pixel (x, y) has red x%256
// and green y%256, so that an image says which pixels it shows.
func (d fakeDesktop) ScreenshotRegion(ctx context.Context, r image.Rectangle) (desktop.Screenshot, error) {
	d.log(fmt.Sprintf("screenshot %v", r))
	img := image.NewRGBA(image.Rect(0, 0, r.Dx(), r.Dy()))
	for y := range r.Dy() {
		for x := range r.Dx() {
			img.Set(x, y, color.RGBA{uint8(r.Min.X + x), uint8(r.Min.Y + y), 0, 255})
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return desktop.Screenshot{PNG: b.Bytes(), Width: r.Dx(), Height: r.Dy()}, nil
}
func (d fakeDesktop) Clipboard(ctx context.Context) (string, bool, error) { return "", true, nil }
func (d fakeDesktop) SetClipboard(ctx context.Context, t string) error    { return d.log("clip " + t) }

func (d fakeDesktop) Tree(ctx context.Context) (desktop.Tree, error) { return d.f.tree, nil }
func (d fakeDesktop) Locate(ctx context.Context, ref string) (desktop.Element, error) {
	el, ok := d.f.elements[ref]
	if !ok {
		return el, &refGone{ref}
	}
	return el, nil
}
func (d fakeDesktop) Focus(ctx context.Context, ref string) (desktop.Element, error) {
	el, err := d.Locate(ctx, ref)
	if err == nil {
		d.log("focus " + ref)
	}
	return el, err
}
func (d fakeDesktop) Mark(ctx context.Context) error { return nil }
func (d fakeDesktop) Settle(ctx context.Context, wait, quiet, longest time.Duration) (desktop.Change, error) {
	return d.f.change, nil
}
func (d fakeDesktop) Still(ctx context.Context, quiet, timeout time.Duration) (desktop.Stillness, error) {
	d.log(fmt.Sprintf("still %s %s", quiet, timeout))
	return d.f.still, nil
}

// refGone is the agent's answer for a ref that names nothing now.
type refGone struct{ ref string }

func (e *refGone) Error() string {
	return service.ErrAgent.Error() + ": " + e.ref + " (button \"Save\") is gone: the page changed or was left"
}
func (*refGone) Unwrap() error { return service.ErrAgent }

func withMods(mods []string) string {
	if len(mods) == 0 {
		return ""
	}
	return " +" + strings.Join(mods, "+")
}

type agentErr struct{}

func (*agentErr) Error() string { return service.ErrAgent.Error() + ": unknown key name 'Nope'" }
func (*agentErr) Unwrap() error { return service.ErrAgent }

func fmtCall(op string, n ...int) string {
	b, _ := json.Marshal(n)
	return op + " " + string(b)
}
