package resources_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/color"
	"image/png"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// browserSandbox starts a browser sandbox that serves files (name ->
// content) on 127.0.0.1:8000 inside it.
func browserSandbox(t testing.TB, files map[string]string) (*service.Manager, string) {
	t.Helper()
	m, docker := dockertest.Manager(t, nil)
	dockertest.Run(t, m)
	project := browserProject(t, docker, "browser")
	st, err := m.Start(context.Background(), project)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.Image, "-browser:") {
		t.Fatalf("the sandbox runs %s, not the browser image", st.Image)
	}
	script := "mkdir -p /tmp/page && cd /tmp/page"
	for name, content := range files {
		script += "\ncat > " + name + " <<'EOF'\n" + content + "\nEOF"
	}
	exec1(t, m, project, script+"\nsetsid python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 < /dev/null &")
	dockertest.PollExec(t, m, project, "the page server answers", "python3 -c 'import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:8000/\")'")
	return m, project
}

// browserOf answers sandbox/browser for the project as the sidecar does:
// through the DevTools relay of a carrier of m's sandboxes, closed at the
// test's end.
func browserOf(t testing.TB, m *service.Manager, project string) (string, error) {
	relays := ports.NewCarrier(m, dockertest.Engine(t), ports.Options{Log: zerolog.Nop()})
	t.Cleanup(relays.Close)
	return relays.Browser(context.Background(), project)
}

// puppeteer runs body, the inside of an async function that has browser
// (puppeteer-core's, connected to ws as it is) and args in scope, and
// returns what it printed. PILOT_PLAYWRIGHT_DIR names the node_modules
// parent, as for playwright.
func puppeteer(t testing.TB, ws, body string, args ...string) string {
	t.Helper()
	dir := os.Getenv("PILOT_PLAYWRIGHT_DIR")
	if dir == "" {
		dir = "../ui"
	}
	script := `const puppeteer = require('puppeteer-core');
(async () => {
  const args = process.argv.slice(2);
  // defaultViewport null: the pages keep the desktop window's size.
  const browser = await puppeteer.connect({ browserWSEndpoint: process.argv[1], defaultViewport: null });
  try {
` + body + `
  } finally {
    await browser.disconnect();
  }
})().catch(e => { console.error(e); process.exit(1); });`
	cmd := exec.Command("node", append([]string{"-e", script, ws}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("puppeteer-core (in %s): %v\n%s", dir, err, out)
	}
	return string(out)
}

// TestBrowserPuppeteer: puppeteer.connect takes sandbox/browser's address
// as it is, opens a page served in the sandbox, evaluates script on it and
// screenshots it; after a stop, the address's port refuses connections.
func TestBrowserPuppeteer(t *testing.T) {
	m, project := browserSandbox(t, map[string]string{"index.html": page})
	ctx := context.Background()
	ws, err := browserOf(t, m, project)
	if err != nil {
		t.Fatal(err)
	}
	out := puppeteer(t, ws, `
    const page = await browser.newPage();
    await page.goto('http://127.0.0.1:8000/');
    const png = await page.screenshot();
    console.log(JSON.stringify({
      title: await page.title(),
      sum: await page.evaluate(() => 40 + 2),
      png: Buffer.from(png).toString('base64'),
    }));
    await page.close();`)
	var got struct {
		Title string
		Sum   int
		PNG   []byte
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("puppeteer printed %q: %v", out, err)
	}
	if got.Title != "pilot page" || got.Sum != 42 {
		t.Fatalf("puppeteer saw title %q and 40+2 = %d", got.Title, got.Sum)
	}
	img, err := png.Decode(bytes.NewReader(got.PNG))
	if err != nil {
		t.Fatalf("puppeteer's screenshot: %v", err)
	}
	if !block(img, magenta) {
		t.Fatalf("puppeteer's screenshot does not show the page: the middle is %v", img.At(img.Bounds().Dx()/2, img.Bounds().Dy()/2))
	}

	if _, err := m.Stop(ctx, project); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(ws)
	if c, err := net.Dial("tcp", u.Host); err == nil {
		c.Close()
		t.Fatalf("after the sandbox stopped, its DevTools relay %s still accepts connections", u.Host)
	}
}

// form is one text box over the whole page, magenta, with the focus.
const form = `<!doctype html><title>form</title>
<style>html,body{margin:0;height:100%}input{all:unset;display:block;box-sizing:border-box;width:100%;height:100%;background:#ff00aa;font:40px sans-serif}</style>
<input id=i autofocus>`

// TestBrowserTypesNonASCII: text typed with the desktop's type tool into a
// page's text box arrives exactly, as the page's script reads it.
func TestBrowserTypesNonASCII(t *testing.T) {
	m, project := browserSandbox(t, map[string]string{"index.html": form})
	ctx := context.Background()
	exec1(t, m, project, "pilot-open http://127.0.0.1:8000/")
	waitColour(t, m, project, magenta)
	d, err := m.Desktop(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Click(ctx, 640, 400, 1, 1); err != nil {
		t.Fatal(err)
	}
	const text = "héllo wörld — 日本語 ✓ 🙂 Ω ß ñ"
	if err := d.Type(ctx, text); err != nil {
		t.Fatal(err)
	}
	ws, err := browserOf(t, m, project)
	if err != nil {
		t.Fatal(err)
	}
	// Chromium handles the key events in its own time: wait, bounded, for
	// as many characters as were typed.
	out := puppeteer(t, ws, `
    const page = (await browser.pages()).find(p => p.url().includes(':8000'));
    const want = [...args[0]].length;
    await page.waitForFunction(n => [...document.getElementById('i').value].length >= n, { timeout: 10000 }, want).catch(() => {});
    console.log(JSON.stringify(await page.evaluate(() => document.getElementById('i').value)));`, text)
	var got string
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("puppeteer printed %q: %v", out, err)
	}
	if got != text {
		t.Fatalf("the text box holds %q (%s), typed %q", got, strconv.QuoteToASCII(got), text)
	}
}

// hog allocates memory and touches it until it dies.
const hog = `<!doctype html><title>hog</title><body style="background:#fff"><script>
const kept = [];
function more() { for (let i = 0; i < 4; i++) { const b = new Uint8Array(32 << 20); b.fill(1); kept.push(b); } setTimeout(more, 0); }
more();
</script>`

// TestBrowserTabOutOfMemory: a tab that allocates past the sandbox's memory
// limit dies alone: Chromium, the desktop and the sandbox go on, and a new
// page opens and draws. It opens both ways pilot-open has for a running
// Chromium: a URL through the DevTools port, a file path through
// Chromium's command line.
func TestBrowserTabOutOfMemory(t *testing.T) {
	m, project := browserSandbox(t, map[string]string{"index.html": page, "hog.html": hog})
	ctx := context.Background()
	exec1(t, m, project, "pilot-open http://127.0.0.1:8000/")
	waitColour(t, m, project, magenta)
	before := survivors(t, m, project)
	oomKills := func() int {
		// cgroup v2's memory.events, or v1's memory.oom_control.
		out := execOut(t, m, project, "cat /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null | awk '$1 == \"oom_kill\" {print $2}'")
		n, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			t.Fatalf("memory.events: %q", out)
		}
		return n
	}
	kills := oomKills()

	exec1(t, m, project, "pilot-open http://127.0.0.1:8000/hog.html")
	deadline := time.Now().Add(60 * time.Second)
	for oomKills() == kills {
		if time.Now().After(deadline) {
			t.Fatal("the hog page did not go past the memory limit in 60s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if after := survivors(t, m, project); after != before {
		t.Fatalf("past the memory limit, a process other than the tab died: before %s, after %s", before, after)
	}
	st, err := m.Status(ctx, project)
	if err != nil || st == nil || st.Status != service.StatusRunning {
		t.Fatalf("the sandbox after the hog: %+v, %v", st, err)
	}
	// A file path, not a URL: pilot-open hands it to Chromium's command
	// line, which reads it from here.
	exec1(t, m, project, "cd /tmp/page && pilot-open index.html")
	waitColour(t, m, project, magenta)
}

// survivors lists the process IDs of what must outlive a tab: the X
// server, the VNC server, the window manager and Chromium's browser process.
func survivors(t testing.TB, m *service.Manager, project string) string {
	t.Helper()
	return strings.TrimSpace(execOut(t, m, project,
		"for p in Xvfb x11vnc fluxbox; do printf '%s=%s ' $p \"$(pgrep -o -x $p)\"; done; "+
			"printf 'chromium=%s' \"$(pgrep -o -x chromium)\""))
}

func execOut(t testing.TB, m *service.Manager, project, cmd string) string {
	t.Helper()
	out, err := m.Exec(context.Background(), project, service.ExecRequest{Command: cmd, Timeout: 30 * time.Second})
	if err != nil || out.ExitCode != 0 {
		t.Fatalf("%s: %v (exit %d) %s %s", cmd, err, out.ExitCode, out.Stdout, out.Stderr)
	}
	return out.Stdout
}

// webgl clears a canvas over the whole page to magenta with WebGL, or
// leaves it white and says why in the title.
const webgl = `<!doctype html><title>webgl</title>
<style>html,body{margin:0;height:100%;background:#fff}canvas{display:block;width:100%;height:100%}</style>
<canvas id=c></canvas><script>
const gl = document.getElementById('c').getContext('webgl');
if (gl) { gl.clearColor(1, 0, 0xaa / 0xff, 1); gl.clear(gl.COLOR_BUFFER_BIT); document.title = 'webgl ' + gl.getParameter(gl.VERSION); }
else document.title = 'no webgl';
</script>`

// TestBrowserWebGL: pages draw WebGL (with Chromium's SwiftShader: the
// image has no Mesa and the container no GPU).
func TestBrowserWebGL(t *testing.T) {
	m, project := browserSandbox(t, map[string]string{"index.html": webgl})
	exec1(t, m, project, "pilot-open http://127.0.0.1:8000/")
	waitColour(t, m, project, magenta)
}

// TestBrowserOpenRaisesTheWindow: a URL opened while another window covers
// Chromium's brings Chromium's to the front with the new tab.
func TestBrowserOpenRaisesTheWindow(t *testing.T) {
	m, project := browserSandbox(t, map[string]string{"index.html": page})
	exec1(t, m, project, "pilot-open http://127.0.0.1:8000/")
	waitColour(t, m, project, magenta)
	exec1(t, m, project, "setsid xterm -bg '#0000ff' -geometry 300x100+0+0 -e sleep 600 >/dev/null 2>&1 < /dev/null &")
	waitColour(t, m, project, color.RGBA{0, 0, 0xff, 0xff})
	exec1(t, m, project, "pilot-open 'http://127.0.0.1:8000/?again'")
	waitColour(t, m, project, magenta)
}

// TestBrowserConnectsAfterItsSparePipeIsKilled: the relay keeps a DevTools
// pipe started ahead (relay.Pool), a process that can end while it waits
// (it runs as the desktop's user, whom the sandbox's programs cannot
// signal, so here that user kills it). The next connection must still
// reach Chromium, through a fresh pipe.
func TestBrowserConnectsAfterItsSparePipeIsKilled(t *testing.T) {
	m, project := browserSandbox(t, map[string]string{"index.html": page})
	ws, err := browserOf(t, m, project)
	if err != nil {
		t.Fatal(err)
	}
	// The relay's command line ends with its role: [c] keeps pgrep from
	// finding the shell that runs it.
	const spare = "pgrep -u desktop -f '[c]onnect 9222$'"
	dockertest.PollExec(t, m, project, "the spare pipe runs", spare)
	if res, err := m.ExecArgv(context.Background(), project, service.ExecSpec{
		Cmd: []string{"pkill", "-u", "desktop", "-f", "[c]onnect 9222$"}, User: desktop.DesktopUser, Timeout: time.Minute,
	}); err != nil || res.ExitCode != 0 {
		t.Fatalf("kill the spare pipe: %v %+v", err, res)
	}
	dockertest.PollExec(t, m, project, "the spare pipe is gone", "! "+spare)
	if out := puppeteer(t, ws, `console.log((await browser.version()).startsWith('Chrome') ? 'reached' : 'no');`); !strings.Contains(out, "reached") {
		t.Errorf("puppeteer: %s", out)
	}
}
