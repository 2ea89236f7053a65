package egress_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// TestAnAnswerCrossesTheRulesLoading: a connection from outside (a
// viewer's, the readiness probe's) whose request came in before the rules
// loaded and whose answer leaves after them gets its answer. Marked only
// by their next packet in, such connections lost the answer: a start's
// probe then waited out its 3 s in about half the starts
// (docs/network.md, The rules).
func TestAnAnswerCrossesTheRulesLoading(t *testing.T) {
	s := newSandboxBare(t)
	server := `nohup python3 -c '
import os, socket, time
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("0.0.0.0", 7001)); l.listen(1)
open("/tmp/listening", "w").close()
c, _ = l.accept(); c.recv(100)
open("/tmp/asked", "w").close()
while not os.path.exists("/tmp/go"): time.sleep(0.05)
c.sendall(b"the answer\n"); time.sleep(10)
' >/dev/null 2>&1 &`
	if out, code := s.exec(server); code != 0 {
		t.Fatalf("start the server: %s", out)
	}
	s.pollExec("the server listens", "test -e /tmp/listening", false)
	var in struct {
		NetworkSettings struct {
			Networks map[string]struct{ IPAddress string }
		}
	}
	s.api.GetJSON("/containers/"+s.id+"/json", &in)
	var addr string
	for _, n := range in.NetworkSettings.Networks {
		if n.IPAddress != "" {
			addr = n.IPAddress
		}
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(addr, "7001"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("the question\n")); err != nil {
		t.Fatal(err)
	}
	s.pollExec("the question came in", "test -e /tmp/asked", false)
	s.enforce()
	s.exec("touch /tmp/go")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "the answer" {
		t.Errorf("the answer after the rules: %q, %v", line, err)
	}
}
