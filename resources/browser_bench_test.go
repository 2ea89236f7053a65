package resources_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// The browser's benchmarks each start a browser sandbox and report medians
// (the mean of a few runs on a shared machine says little), e.g.
//
//	go test -run '^$' -bench Browser -benchtime 7x ./resources/

// white is a page that is not the magenta one: between warm runs.
const white = `<!doctype html><title>white</title><body style="background:#fff">`

// BenchmarkBrowserOpenCold: pilot-open with Chromium not running (killed
// before each run, its profile kept, as after a stop) until the page is
// painted on the screen: from the exec's start to the first region
// screenshot of the middle that shows the page.
func BenchmarkBrowserOpenCold(b *testing.B) {
	m, project := browserSandbox(b, map[string]string{"index.html": page})
	d := desktopOf(b, m, project)
	var runs []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		exec1(b, m, project, "pkill -x chromium; for i in $(seq 100); do pgrep -x chromium >/dev/null || exit 0; sleep 0.05; done; exit 1")
		waitRegion(b, d, func(c color.RGBA) bool { return c != magenta })
		runs = append(runs, timeOpen(b, m, project, d, "http://127.0.0.1:8000/"))
	}
	reportMedian(b, runs)
}

// BenchmarkBrowserOpenWarm: pilot-open with Chromium running and another
// page showing, until the new tab is painted.
func BenchmarkBrowserOpenWarm(b *testing.B) {
	m, project := browserSandbox(b, map[string]string{"index.html": page, "white.html": white})
	d := desktopOf(b, m, project)
	var runs []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		exec1(b, m, project, "pilot-open http://127.0.0.1:8000/white.html")
		waitRegion(b, d, func(c color.RGBA) bool { return c == color.RGBA{0xff, 0xff, 0xff, 0xff} })
		runs = append(runs, timeOpen(b, m, project, d, "http://127.0.0.1:8000/?"+strconv.Itoa(i)))
	}
	reportMedian(b, runs)
}

// BenchmarkBrowserMemory: Chromium's memory with one simple page painted,
// as the sum of its processes' proportional set sizes (shared pages split
// between the processes that share them; the anonymous part is what is
// not the program's files), and how much the sandbox's memory, as its
// cgroup counts it, grew from before Chromium started (the program's files
// are in the page cache already, from the run before).
func BenchmarkBrowserMemory(b *testing.B) {
	m, project := browserSandbox(b, map[string]string{"index.html": page})
	d := desktopOf(b, m, project)
	var pss, anon, grown []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		exec1(b, m, project, "pkill -x chromium; for i in $(seq 100); do pgrep -x chromium >/dev/null || exit 0; sleep 0.05; done; exit 1")
		before := cgroupMemory(b, m, project)
		timeOpen(b, m, project, d, "http://127.0.0.1:8000/")
		// Let it settle: the first seconds include start-up's garbage.
		time.Sleep(3 * time.Second)
		var kb [2]float64 // Pss, Pss_Anon
		out := execOut(b, m, project, `for p in $(pgrep -x chromium); do cat /proc/$p/smaps_rollup; done | awk '$1 == "Pss:" {p += $2} $1 == "Pss_Anon:" {a += $2} END {print p, a}'`)
		if _, err := fmt.Sscan(out, &kb[0], &kb[1]); err != nil || kb[0] == 0 {
			b.Fatalf("chromium's PSS: %q", out)
		}
		pss, anon = append(pss, kb[0]/1024), append(anon, kb[1]/1024)
		grown = append(grown, (cgroupMemory(b, m, project)-before)/(1<<20))
	}
	b.ReportMetric(median(pss), "chromium-PSS-MB")
	b.ReportMetric(median(anon), "chromium-anon-PSS-MB")
	b.ReportMetric(median(grown), "sandbox-grew-MB")
}

// BenchmarkBrowserCDPConnect: from connectOverCDP (Playwright) and
// puppeteer.connect to the answer of a first evaluate on the page, through
// sandbox/browser's relay; each run connects anew.
func BenchmarkBrowserCDPConnect(b *testing.B) {
	m, project := browserSandbox(b, map[string]string{"index.html": page})
	exec1(b, m, project, "pilot-open http://127.0.0.1:8000/")
	waitRegion(b, desktopOf(b, m, project), func(c color.RGBA) bool { return c == magenta })
	ws, err := browserOf(b, m, project)
	if err != nil {
		b.Fatal(err)
	}
	script := `const { chromium } = require('playwright-core');
const puppeteer = require('puppeteer-core');
(async () => {
  const [ws, n] = [process.argv[1], +process.argv[2]];
  const out = { playwright: [], puppeteer: [] };
  for (let i = 0; i < n; i++) {
    let t = performance.now();
    const pw = await chromium.connectOverCDP(ws);
    await pw.contexts()[0].pages().find(p => p.url().includes(':8000')).evaluate(() => 1 + 1);
    out.playwright.push(performance.now() - t);
    await pw.close();
    t = performance.now();
    const pp = await puppeteer.connect({ browserWSEndpoint: ws, defaultViewport: null });
    await (await pp.pages()).find(p => p.url().includes(':8000')).evaluate(() => 1 + 1);
    out.puppeteer.push(performance.now() - t);
    await pp.disconnect();
  }
  console.log(JSON.stringify(out));
})().catch(e => { console.error(e); process.exit(1); });`
	b.ResetTimer()
	cmd := exec.Command("node", "-e", script, ws, strconv.Itoa(b.N))
	cmd.Dir = nodeDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("node: %v\n%s", err, out)
	}
	var ms struct{ Playwright, Puppeteer []float64 }
	if err := json.Unmarshal(out, &ms); err != nil {
		b.Fatalf("node printed %q: %v", out, err)
	}
	b.ReportMetric(median(ms.Playwright), "playwright-ms")
	b.ReportMetric(median(ms.Puppeteer), "puppeteer-ms")
}

// BenchmarkBrowserCDPTransfer: through sandbox/browser's relay, on one
// puppeteer connection, the round trip of a small evaluate and the
// transfer of an 8 MiB string from the page (MB/s): what the DevTools
// relay's pipe carries, not Chromium's start.
func BenchmarkBrowserCDPTransfer(b *testing.B) {
	m, project := browserSandbox(b, map[string]string{"index.html": page})
	exec1(b, m, project, "pilot-open http://127.0.0.1:8000/")
	waitRegion(b, desktopOf(b, m, project), func(c color.RGBA) bool { return c == magenta })
	ws, err := browserOf(b, m, project)
	if err != nil {
		b.Fatal(err)
	}
	script := `const puppeteer = require('puppeteer-core');
(async () => {
  const [ws, n] = [process.argv[1], +process.argv[2]];
  const out = { roundtrip: [], transfer: [] };
  const pp = await puppeteer.connect({ browserWSEndpoint: ws, defaultViewport: null });
  const page = (await pp.pages()).find(p => p.url().includes(':8000'));
  for (let i = 0; i < n; i++) {
    let t = performance.now();
    await page.evaluate(() => 1 + 1);
    out.roundtrip.push(performance.now() - t);
    t = performance.now();
    const s = await page.evaluate(() => 'x'.repeat(8 << 20));
    if (s.length !== 8 << 20) throw new Error('short: ' + s.length);
    out.transfer.push(performance.now() - t);
  }
  await pp.disconnect();
  console.log(JSON.stringify(out));
})().catch(e => { console.error(e); process.exit(1); });`
	b.ResetTimer()
	cmd := exec.Command("node", "-e", script, ws, strconv.Itoa(b.N))
	cmd.Dir = nodeDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("node: %v\n%s", err, out)
	}
	var ms struct{ Roundtrip, Transfer []float64 }
	if err := json.Unmarshal(out, &ms); err != nil {
		b.Fatalf("node printed %q: %v", out, err)
	}
	b.ReportMetric(median(ms.Roundtrip)*1000, "µs/roundtrip")
	b.ReportMetric(float64(8<<20)/1e6/(median(ms.Transfer)/1000), "MB/s")
}

func nodeDir() string {
	if dir := os.Getenv("PILOT_PLAYWRIGHT_DIR"); dir != "" {
		return dir
	}
	return "../ui"
}

func desktopOf(b *testing.B, m *service.Manager, project string) *desktop.Desktop {
	d, err := m.Desktop(context.Background(), project)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// timeOpen runs pilot-open url and returns how long until the middle of the
// screen shows the magenta page.
func timeOpen(b *testing.B, m *service.Manager, project string, d *desktop.Desktop, url string) time.Duration {
	start := time.Now()
	exec1(b, m, project, "pilot-open "+url)
	waitRegion(b, d, func(c color.RGBA) bool { return c == magenta })
	return time.Since(start)
}

// middle is a small square in the middle of the 1280x800 screen, inside
// the page whatever Chromium's toolbars.
var middle = image.Rect(620, 380, 660, 420)

// waitRegion takes screenshots of the middle, as fast as the agent answers,
// until every pixel of it satisfies ok (30 s at most).
func waitRegion(b *testing.B, d *desktop.Desktop, ok func(color.RGBA) bool) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		shot, err := d.ScreenshotRegion(context.Background(), middle)
		if err != nil {
			b.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(shot.PNG))
		if err != nil {
			b.Fatal(err)
		}
		if all(img, ok) {
			return
		}
	}
	b.Fatal("the screen's middle did not change as awaited in 30s")
}

func all(img image.Image, ok func(color.RGBA) bool) bool {
	r := img.Bounds()
	for x := r.Min.X; x < r.Max.X; x++ {
		for y := r.Min.Y; y < r.Max.Y; y++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if !ok(color.RGBA{uint8(cr >> 8), uint8(cg >> 8), uint8(cb >> 8), 0xff}) {
				return false
			}
		}
	}
	return true
}

// cgroupMemory is the sandbox's memory use as its cgroup counts it (v2's
// memory.current or v1's memory.usage_in_bytes), in bytes.
func cgroupMemory(b *testing.B, m *service.Manager, project string) float64 {
	out := execOut(b, m, project, "cat /sys/fs/cgroup/memory.current 2>/dev/null || cat /sys/fs/cgroup/memory/memory.usage_in_bytes")
	n, err := strconv.ParseFloat(strings.TrimSpace(out), 64)
	if err != nil {
		b.Fatalf("the cgroup's memory: %q", out)
	}
	return n
}

func reportMedian(b *testing.B, runs []time.Duration) {
	ms := make([]float64, len(runs))
	for i, d := range runs {
		ms[i] = float64(d) / float64(time.Millisecond)
	}
	b.ReportMetric(median(ms), "median-ms")
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
