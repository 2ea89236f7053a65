package resources_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// page is served from inside the sandbox: one button over the whole page,
// magenta until it is clicked, then green.
const page = `<!doctype html><title>pilot page</title>
<style>html,body{margin:0;height:100%}button{all:unset;display:block;width:100%;height:100%;background:#ff00aa}</style>
<button id=b onclick="this.style.background='#00cc44';document.title='clicked'"></button>`

var (
	magenta = color.RGBA{0xff, 0x00, 0xaa, 0xff}
	green   = color.RGBA{0x00, 0xcc, 0x44, 0xff}
)

// browserProject makes a project whose settings ask for the given image.
func browserProject(t testing.TB, docker service.Docker, variant string) string {
	project := dockertest.Project(t, docker)
	os.MkdirAll(filepath.Join(project, ".pilot"), 0o755)
	settings := `{"sandbox": {"image": "` + variant + `"}}`
	if err := os.WriteFile(filepath.Join(project, ".pilot", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	return project
}

// TestBrowserSandbox starts a browser sandbox, opens a page served inside it
// with pilot-open, sees it drawn, clicks it through the desktop, scripts it
// over CDP from the host with playwright-core, and opens it again after
// Chromium is killed.
func TestBrowserSandbox(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dockertest.Run(t, m)
	project := browserProject(t, docker, "browser")
	ctx := context.Background()
	st, err := m.Start(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.Image, "-browser:") {
		t.Fatalf("the sandbox runs %s, not the browser image", st.Image)
	}
	exec1(t, m, project, "mkdir -p /tmp/page && cat > /tmp/page/index.html <<'EOF'\n"+page+"\nEOF\n"+
		"cd /tmp/page && setsid python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 < /dev/null &")
	dockertest.PollExec(t, m, project, "the page server answers", "python3 -c 'import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:8000/\")'")
	exec1(t, m, project, "pilot-open http://127.0.0.1:8000/")
	waitColour(t, m, project, magenta)

	d, err := m.Desktop(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Click(ctx, 640, 500, 1, 1); err != nil {
		t.Fatal(err)
	}
	waitColour(t, m, project, green)

	ws, err := browserOf(t, m, project)
	if err != nil {
		t.Fatal(err)
	}
	checkRelayRefuses(t, ws)
	out := playwright(t, ws)
	if !strings.Contains(out, "title=clicked") || !strings.Contains(out, "sum=42") || !strings.Contains(out, "png=ok") {
		t.Fatalf("playwright over CDP: %s", out)
	}

	exec1(t, m, project, "pkill -x chromium; for i in $(seq 50); do pgrep -x chromium >/dev/null || exit 0; sleep 0.1; done; exit 1")
	exec1(t, m, project, "pilot-open http://127.0.0.1:8000/")
	waitColour(t, m, project, magenta)
}

// TestDesktopSandboxHasNoBrowser: sandbox/browser on the desktop image.
func TestDesktopSandboxHasNoBrowser(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dockertest.Run(t, m)
	project := browserProject(t, docker, "desktop")
	ctx := context.Background()
	if _, err := m.Start(ctx, project); err != nil {
		t.Fatal(err)
	}
	if _, err := browserOf(t, m, project); !errors.Is(err, service.ErrNoBrowser) {
		t.Fatalf("sandbox/browser on a desktop sandbox: %v, want ErrNoBrowser", err)
	}
	exec1(t, m, project, "! command -v chromium")
}

func exec1(t testing.TB, m *service.Manager, project, cmd string) {
	t.Helper()
	out, err := m.Exec(context.Background(), project, service.ExecRequest{Command: cmd, Timeout: 30 * time.Second})
	if err != nil || out.ExitCode != 0 {
		t.Fatalf("%s: %v (exit %d) %s %s", cmd, err, out.ExitCode, out.Stdout, out.Stderr)
	}
}

// waitColour polls screenshots until the middle of the display is c.
func waitColour(t testing.TB, m *service.Manager, project string, c color.RGBA) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var got color.Color
	for time.Now().Before(deadline) {
		shot, err := m.Screenshot(context.Background(), project)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(shot.PNG))
		if err != nil {
			t.Fatal(err)
		}
		if block(img, c) {
			return
		}
		got = img.At(img.Bounds().Dx()/2, img.Bounds().Dy()/2)
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the page's block is not %v after 30s (the middle is %v)", c, got)
}

// block says whether a 200x200 square in the middle of img is all c.
func block(img image.Image, c color.RGBA) bool {
	cx, cy := img.Bounds().Dx()/2, img.Bounds().Dy()/2
	for x := cx - 100; x < cx+100; x += 10 {
		for y := cy - 100; y < cy+100; y += 10 {
			r, g, b, _ := img.At(x, y).RGBA()
			if uint8(r>>8) != c.R || uint8(g>>8) != c.G || uint8(b>>8) != c.B {
				return false
			}
		}
	}
	return true
}

// checkRelayRefuses: without the secret, and for the /json listing, the
// relay answers 404.
func checkRelayRefuses(t *testing.T, ws string) {
	t.Helper()
	host := "http://" + strings.SplitN(strings.TrimPrefix(ws, "ws://"), "/", 2)[0]
	path := ws[strings.Index(ws, "/devtools/"):]
	for _, url := range []string{host + "/json", host + "/json/version", host + path} {
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Fatalf("%s: status %d, want 404", url, res.StatusCode)
		}
	}
}

// playwright connects playwright-core to ws and reports what it saw. It
// needs playwright-core: PILOT_PLAYWRIGHT_DIR names a node_modules parent
// that has it (default ui/).
func playwright(t *testing.T, ws string) string {
	t.Helper()
	dir := os.Getenv("PILOT_PLAYWRIGHT_DIR")
	if dir == "" {
		dir = "../ui"
	}
	script := `const { chromium } = require('playwright-core');
(async () => {
  const browser = await chromium.connectOverCDP(process.argv[1]);
  const page = browser.contexts()[0].pages().find(p => p.url().includes(':8000'));
  const title = await page.title();
  const sum = await page.evaluate(() => 40 + 2);
  const png = await page.screenshot();
  console.log('title=' + title, 'sum=' + sum, 'png=' + (png.subarray(1, 4).toString() === 'PNG' ? 'ok' : 'bad'));
  await browser.close();
})().catch(e => { console.error(e); process.exit(1); });`
	cmd := exec.Command("node", "-e", script, ws)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("playwright-core (in %s): %v\n%s", dir, err, out)
	}
	return string(out)
}
