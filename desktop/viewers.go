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

// ViewerConnections counts the established connections to the VNC server
// or to websockify in the output of ViewerCommand: a viewer in a browser
// holds one to websockify, which holds one to the VNC server; a native
// VNC viewer holds one to the VNC server. Lines that do not parse are
// skipped.
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
		if err == nil && (port == VNCPort || port == NoVNCPort) {
			n++
		}
	}
	return n
}
