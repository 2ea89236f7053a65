package desktop

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// ViewerCommand lists the sandbox's TCP connections (its own network
// namespace's), for ViewerConnections. It needs no privilege and no tool
// beyond cat.
var ViewerCommand = []string{"cat", "/proc/net/tcp", "/proc/net/tcp6"}

// tcpEstablished is the state column of an established connection in
// /proc/net/tcp.
const tcpEstablished = "01"

// ViewerConnections counts the VNC sessions in the output of
// ViewerCommand: the established connections to the VNC server. A viewer
// in a browser has websockify hold one for it, a native VNC viewer holds
// one itself. Connections to websockify alone are not viewers: a page
// load, or an HTTP client's idle keep-alive connection (the readiness
// probe's lingers for a minute and more), holds one without a session.
// Lines that do not parse are skipped.
func ViewerConnections(procNetTCP []byte) int {
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(procNetTCP))
	for sc.Scan() {
		// "  0: 0100007F:170C 0100007F:8A2E 01 ...": sl, local, remote, state
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || fields[3] != tcpEstablished {
			continue
		}
		_, hexPort, ok := strings.Cut(fields[1], ":")
		if !ok {
			continue
		}
		port, err := strconv.ParseUint(hexPort, 16, 16)
		if err == nil && port == VNCPort {
			n++
		}
	}
	return n
}
