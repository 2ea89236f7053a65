package service_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/rfbtest"
)

// TestManyViewersAtOnceKeepTheVNCServer runs x11vnc's threaded mode
// (-threads, which its manual calls experimental) the way a busy desktop
// app could: rounds of viewers that connect at the same moment through
// the viewer and the watch addresses, ask for a picture, send input or
// not, and leave abruptly, beside clients that leave in the middle of the
// handshake or right after connecting. x11vnc must come out of it as the
// same process (a crash would be restarted by the entrypoint, with a new
// pid), and a new viewer must still get a picture.
//
// All viewers authenticate at once: in threaded mode two password checks
// in the same instant could refuse a right password (libvncserver's DES
// keeps its key schedule in globals), and websockify now lets one
// handshake through at a time (1 to 3 refusals in 3 runs of 4 before).
func TestManyViewersAtOnceKeepTheVNCServer(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	st, err := m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	pid := exec(t, m, dir, "pgrep -x x11vnc").Stdout
	vnc := fmt.Sprintf("127.0.0.1:%d", st.VNCPort)
	for round := range 4 {
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := oneViewer(i, st.ViewerURL, st.WatchURL, vnc); err != nil {
					errs <- fmt.Errorf("round %d, viewer %d: %w", round, i, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
	if now := exec(t, m, dir, "pgrep -x x11vnc").Stdout; now != pid {
		t.Fatalf("x11vnc was pid %q, now %q: it ended under many viewers", strings.TrimSpace(pid), strings.TrimSpace(now))
	}
	c, err := rfbtest.DialViewer(st.ViewerURL, 10*time.Second)
	if err != nil {
		t.Fatalf("a viewer after the rounds: %v", err)
	}
	defer c.Close()
	if err := c.Sync(10 * time.Second); err != nil {
		t.Fatalf("a picture after the rounds: %v", err)
	}
}

// oneViewer is the i-th client of a round: by turns a viewer in control
// that moves the pointer, a watcher, one that leaves after the banner, and
// one that connects and leaves at once.
func oneViewer(i int, viewerURL, watchURL, vnc string) error {
	switch i % 4 {
	case 0, 1:
		url := viewerURL
		if i%4 == 1 {
			url = watchURL
		}
		c, err := rfbtest.DialViewer(url, 20*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		if i%4 == 0 {
			c.Pointer(0, 10+i, 10+i)
		}
		return c.Sync(20 * time.Second)
	case 2:
		nc, err := net.DialTimeout("tcp", vnc, 10*time.Second)
		if err != nil {
			return err
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(20 * time.Second))
		banner := make([]byte, 12)
		_, err = nc.Read(banner)
		return err
	default:
		nc, err := net.DialTimeout("tcp", vnc, 10*time.Second)
		if err != nil {
			return err
		}
		return nc.Close()
	}
}
