package desktop

import "testing"

func TestViewerConnections(t *testing.T) {
	const header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	for _, tc := range []struct {
		name, table string
		want        int
	}{
		{"listening only", header +
			"   0: 00000000:170C 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1\n" +
			"   1: 00000000:17C0 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 2 1\n", 0},
		{"a browser viewer: to websockify, and websockify to the VNC server", header +
			"   0: 00000000:17C0 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 2 1\n" +
			"   1: 0200A8C0:17C0 0100A8C0:D2F4 01 00000000:00000000 00:00000000 00000000  1000        0 3 1\n" +
			"   2: 0100007F:170C 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000        0 4 1\n" +
			"   3: 0100007F:9C40 0100007F:170C 01 00000000:00000000 00:00000000 00000000  1000        0 5 1\n", 1},
		{"page loads and idle keep-alive connections to websockify, no session", header +
			"   0: 0660A8C0:17C0 0160A8C0:E8C0 01 00000000:00000000 02:000AFC5C 00000000  1000        0 1 2\n" +
			"   1: 0660A8C0:17C0 0160A8C0:E8D2 01 00000000:00000000 02:000AFC63 00000000  1000        0 2 2\n" +
			"   2: 0100007F:9526 0100007F:170C 06 00000000:00000000 03:00001769 00000000     0        0 0 3\n", 0},
		{"a native VNC viewer", header +
			"   0: 0660A8C0:170C 0160A8C0:E8C0 01 00000000:00000000 02:000AFC5C 00000000  1000        0 1 2\n", 1},
		{"a closed viewer lingers in TIME_WAIT", header +
			"   0: 0200A8C0:17C0 0100A8C0:D2F4 06 00000000:00000000 00:00000000 00000000  1000        0 3 1\n", 0},
		{"an IPv6 viewer", header +
			"   0: 0000000000000000FFFF00000200A8C0:170C 0000000000000000FFFF00000100A8C0:E1A2 01 00000000:00000000 00:00000000 00000000  1000 0 9 1\n", 1},
		{"other connections", header +
			"   0: 0200A8C0:8A2E 5DB8D822:01BB 01 00000000:00000000 00:00000000 00000000  1000        0 3 1\n", 0},
		{"garbage", "cat: /proc/net/tcp6: No such file or directory\n:\n 0: x y 01\n 1: a:zz b 01\n", 0},
	} {
		if got := ViewerConnections([]byte(tc.table)); got != tc.want {
			t.Errorf("%s: %d viewer connections, want %d", tc.name, got, tc.want)
		}
	}
}
