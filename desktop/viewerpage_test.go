package desktop

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/resources"
)

// servesViewer answers on a fake noVNC port with the given viewer files
// under /pilot/ and a websockify that sends the RFB banner.
func servesViewer(t *testing.T, files map[string]string) (string, int) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/pilot/{name}", func(w http.ResponseWriter, r *http.Request) {
		body, ok := files[r.PathValue("name")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(body))
	})
	mux.HandleFunc("/websockify", func(w http.ResponseWriter, r *http.Request) {
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
			"Sec-WebSocket-Accept: " + acceptKey(r.Header.Get("Sec-WebSocket-Key")) + "\r\nSec-WebSocket-Protocol: binary\r\n\r\n")
		rw.Write(append(frameHeader(12), "RFB 003.008\n"...))
		rw.Flush()
		rw.ReadByte()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return splitHostPort(t, srv.Listener.Addr().String())
}

// The sandbox may serve its own page where the viewer is (issue 16: a fake
// sign-in form, handed the VNC password): the probe passes only the
// sidecar's own files.
func TestProbeChecksTheViewerAgainstTheSidecarsCopy(t *testing.T) {
	real := map[string]string{}
	for _, name := range []string{"viewer.html", "viewer.js"} {
		data, err := fs.ReadFile(resources.SandboxImage(), "viewer/"+name)
		if err != nil {
			t.Fatal(err)
		}
		real[name] = string(data)
	}
	with := func(name, body string) map[string]string {
		m := map[string]string{}
		for k, v := range real {
			m[k] = v
		}
		if body == "" {
			delete(m, name)
		} else {
			m[name] = body
		}
		return m
	}
	for _, tc := range []struct {
		name     string
		files    map[string]string
		mismatch bool // ErrViewerMismatch; otherwise nil unless failing
		fails    bool
	}{
		{"the sidecar's own viewer", real, false, false},
		{"a fake page", with("viewer.html", "<form>Sign in</form>"), true, true},
		{"the real page with another script", with("viewer.js", real["viewer.js"]+"\nfetch('//evil')"), true, true},
		{"one more byte", with("viewer.html", real["viewer.html"]+" "), true, true},
		{"no script", with("viewer.js", ""), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host, port := servesViewer(t, tc.files)
			err := Probe(context.Background(), host, port, "pilot/viewer.html")
			if (err != nil) != tc.fails || errors.Is(err, ErrViewerMismatch) != tc.mismatch {
				t.Errorf("probe: %v; want failure %v, mismatch %v", err, tc.fails, tc.mismatch)
			}
		})
	}
	// An older image (no viewer label) only has to answer on vnc.html.
	host, port := fakeNoVNC(t, okPage, func(conn net.Conn, rw *bufio.ReadWriter) {
		rw.Write(append(frameHeader(12), "RFB 003.008\n"...))
		rw.Flush()
		rw.ReadByte()
	})
	if err := Probe(context.Background(), host, port, ""); err != nil {
		t.Errorf("probe of an older image's desktop: %v", err)
	}
}

// The page and the banner are asked for together; a page that fails ends
// the wait for the banner at once. Here the WebSocket never sends one,
// and the probe's deadline is an hour away: the probe returns the page's
// error all the same (without the cancel, the test times out).
func TestProbeRefusesAForeignPageWithoutWaitingForTheBanner(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	host, port := fakeNoVNC(t, okPage, func(conn net.Conn, rw *bufio.ReadWriter) { <-release })
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Probe(ctx, host, port, "pilot/viewer.html") }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "viewer page") {
			t.Errorf("probe of a server without the viewer: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the probe waited for the banner after the page had failed")
	}
}

// While x11vnc starts, websockify serves the page but the banner does not
// come, and the start probes every 10 ms: those probes must not fetch the
// viewer's script (330 KB with noVNC bundled) from websockify each time,
// on the CPUs the desktop's start needs.
func TestAProbeWithoutBannerFetchesOnlyThePage(t *testing.T) {
	fetched := map[string]int{}
	var mu sync.Mutex // guards fetched
	mux := http.NewServeMux()
	mux.HandleFunc("/pilot/{name}", func(w http.ResponseWriter, r *http.Request) {
		data, err := fs.ReadFile(resources.SandboxImage(), "viewer/"+r.PathValue("name"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		fetched[r.PathValue("name")]++
		mu.Unlock()
		w.Write(data)
	})
	// websockify when the VNC server does not answer yet: it closes.
	mux.HandleFunc("/websockify", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no VNC server", http.StatusBadGateway)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	host, port := splitHostPort(t, srv.Listener.Addr().String())
	for range 3 {
		if err := Probe(context.Background(), host, port, "pilot/viewer.html"); err == nil {
			t.Fatal("a probe without a banner passed")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if fetched["viewer.html"] != 3 || fetched["viewer.js"] != 0 {
		t.Errorf("fetched %v; want the page each time and the script never", fetched)
	}
}
