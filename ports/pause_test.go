package ports_test

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestAPauseKeepsTheRelays: an exposed port, and a connection open
// through it, outlive a pause: the relay waits for the frozen server,
// which answers once the sandbox is resumed, on the same address.
func TestAPauseKeepsTheRelays(t *testing.T) {
	sb := startSandbox(t)
	ctx := context.Background()
	sb.background(t, echoServer, 8801)
	exposed, err := sb.x.ExposePort(ctx, sb.project, 8801)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", "127.0.0.1:"+portOf(exposed.URL), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	echo := func(text string) string {
		t.Helper()
		conn.SetDeadline(time.Now().Add(time.Minute)) // a guard against hanging, not a measure
		io.WriteString(conn, text)
		buf := make([]byte, len(text))
		if _, err := io.ReadFull(conn, buf); err != nil {
			t.Fatalf("echo of %q: %v", text, err)
		}
		return string(buf)
	}
	if got := echo("before "); got != "before " {
		t.Fatalf("echo %q", got)
	}
	if _, err := sb.m.Pause(ctx, sb.project); err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, "held ") // waits in the relay, or the frozen server's socket
	time.Sleep(time.Second)
	if _, err := sb.m.Start(ctx, sb.project); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len("held "))
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "held " {
		t.Fatalf("what was sent while paused: %q, %v", buf, err)
	}
	if got := echo("after"); got != "after" {
		t.Errorf("echo after the resume %q", got)
	}
	if again, err := sb.x.ExposePort(ctx, sb.project, 8801); err != nil || again != exposed {
		t.Errorf("exposed after the resume: %+v, %v; want the same as before, %+v", again, err, exposed)
	}
}

func portOf(url string) string {
	return strings.TrimSuffix(strings.TrimPrefix(url, "http://127.0.0.1:"), "/")
}
