package resources_test

import (
	"testing"
	"time"
)

// TestNetProxyPython runs the network proxy's Python tests
// (pilotnet/test_*.py) in a sandbox of the desktop image, against the
// proxy the image carries (/usr/local/lib/pilot-net/proxy.py): the
// Python, the ssl module and the kernel (os.splice) the proxy meets there.
func TestNetProxyPython(t *testing.T) {
	m, project := startedSandbox(t)
	pythonSuite{
		what: "the proxy", dir: "/tmp/pilotnet", files: map[string][]byte{"test_proxy.py": readFile(t, "pilotnet/test_proxy.py")},
		env: []string{"PILOT_NET_DIR=/usr/local/lib/pilot-net"}, timeout: 3 * time.Minute,
	}.run(t, m, project)
}
