package desktop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// rfbBanner is how every RFB 3.x server greets a client: "RFB 003.008\n".
var rfbBanner = []byte("RFB 003.00")

// Whatever answers on the sandbox's port may be a program of the sandbox's
// own, so the probe bounds everything it reads and goes nowhere else.
const (
	// maxPageRead is how much of a page is read: noVNC's vnc.html, or a
	// file of the sandbox's viewer (a few KiB).
	maxPageRead = 1 << 20
	// maxProbeHeaders bounds the response headers of the page and of the
	// WebSocket handshake; real ones are a few hundred bytes.
	maxProbeHeaders = 16 << 10
	// maxBannerMessage bounds one WebSocket message while the banner (12
	// bytes, in one message or a few) is read.
	maxBannerMessage = 4 << 10
	// maxWebSocketRead bounds all a probe reads on its WebSocket: the
	// handshake's headers and the banner's messages.
	maxWebSocketRead = maxProbeHeaders + 4*maxBannerMessage
)

// probeBound bounds a probe that brings no deadline of its own (a
// variable for the test of it).
var probeBound = 10 * time.Second

// errRedirect: the page answered with a redirect, which the probe does not
// follow: the sandbox must not make the sidecar request anything else.
var errRedirect = errors.New("redirect refused")

// probeClient asks for the page only: no redirects, no proxy, no
// connections kept, and bounds on time and headers.
func probeClient() *http.Client {
	return &http.Client{
		Timeout: probeBound,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
		Transport: &http.Transport{
			Proxy:                  nil,
			DisableKeepAlives:      true,
			ResponseHeaderTimeout:  probeBound,
			MaxResponseHeaderBytes: maxProbeHeaders,
		},
	}
}

// Probe checks that a client can really use the sandbox's desktop at
// host:wsPort: its viewer answers 200, and a WebSocket through websockify
// yields the VNC server's RFB banner. Published ports accept TCP connections
// well before either is true, so connecting is not enough.
//
// viewerPath is the container's LabelViewer: when set, each file of the
// viewer must be the sidecar's own copy (ErrViewerMismatch otherwise), as
// the panel is about to load it; older images serve noVNC's vnc.html,
// which only has to answer.
func Probe(ctx context.Context, host string, wsPort int, viewerPath string) error {
	return ProbeAuth(ctx, host, wsPort, viewerPath, "")
}

// ProbeAuth is Probe that, given the sandbox's control password, also
// proves that the VNC server behind the viewer is the sandbox's own: it
// takes the password and refuses a wrong one (probeauth.go;
// ErrNotOurVNCServer otherwise).
func ProbeAuth(ctx context.Context, host string, wsPort int, viewerPath, password string) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, probeBound)
		defer cancel()
	}
	base := net.JoinHostPort(host, strconv.Itoa(wsPort))
	// The page and the banner are asked for together, and both must
	// pass; the page's error comes first, as it is the one a foreign
	// server gives. The page's other files (its script, 330 KB with
	// noVNC bundled) are fetched only once the banner came: while x11vnc
	// starts, websockify already serves and every probe fails on the
	// banner, and fetching them each time took the CPU the desktop's
	// start needs (docs/performance.md, The panel's Start).
	bannerCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	banner := make(chan error, 1)
	go func() { banner <- checkVNCServer(bannerCtx, "ws://"+base+"/websockify", password) }()
	var pageErr error
	viewer := viewerPathPattern.MatchString(viewerPath)
	if viewer {
		pageErr = checkViewer(ctx, base, viewerPath, true)
	} else if _, err := getPage(ctx, "http://"+base+"/vnc.html"); err != nil {
		pageErr = fmt.Errorf("noVNC page: %w", err)
	}
	if pageErr != nil {
		cancel() // the banner no longer matters: do not wait for it
	}
	if err := cmp.Or(pageErr, <-banner); err != nil || !viewer {
		return err
	}
	return checkViewer(ctx, base, viewerPath, false)
}

// getPage asks for a page and reads at most maxPageRead of it.
func getPage(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := probeClient().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPageRead))
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return nil, fmt.Errorf("%w: %s to %q", errRedirect, resp.Status, resp.Header.Get("Location"))
	case resp.StatusCode != http.StatusOK:
		return nil, errors.New(resp.Status)
	}
	return body, err
}

// checkVNCServer opens a WebSocket to websockify and reads the first
// bytes the VNC server sends through it; with a password, it proves the
// server is the sandbox's own.
func checkVNCServer(ctx context.Context, url, password string) error {
	if password != "" {
		return provesPassword(ctx, url, password)
	}
	c, err := dialRFB(ctx, url)
	if err != nil {
		return err
	}
	defer c.close()
	return c.expectBanner()
}

// boundedDial dials connections that read at most limit bytes in all: the
// WebSocket library bounds neither the handshake's headers nor the number
// of messages.
func boundedDial(limit int64) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &boundedConn{Conn: conn, left: limit}, nil
	}
}

// errReadBound: a connection of the probe was sent more than it reads.
var errReadBound = errors.New("the sandbox sent more than a desktop's greeting")

// boundedConn is a connection that fails a read past its bound.
type boundedConn struct {
	net.Conn
	left int64 // bytes it may still read; one goroutine reads
}

func (c *boundedConn) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errReadBound
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.Conn.Read(p)
	c.left -= int64(n)
	return n, err
}
