package ports

import (
	"os"
	"reflect"
	"regexp"
	"strconv"
	"testing"
)

func TestUsersOwnLeavesOutTheSandboxsMachinery(t *testing.T) {
	ls := []Listening{{Port: 3000, Process: "node"}, {Port: 5900, Process: "x11vnc"}, {Port: 6080, Process: "websockify"},
		{Port: 9222, Process: "chromium"}, {Port: 15001, Process: "python3"}, {Port: 15053}, {Port: 15080},
		{Port: 15100}, {Port: 15107}, {Port: 15108, Process: "mine"}}
	want := []Listening{{Port: 3000, Process: "node"}, {Port: 15108, Process: "mine"}}
	if got := usersOwn(ls); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

// The proxy's ports are written twice, in proxy.py and here.
func TestTheProxysPortsAreProxyPys(t *testing.T) {
	src, err := os.ReadFile("../resources/docker/sandbox/pilot-net/proxy.py")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"TRANSPARENT_PORT": proxyTransparentPort, "DNS_PORT": proxyDNSPort, "HTTP_PORT": proxyHTTPPort} {
		m := regexp.MustCompile(`(?m)^` + name + ` = (\d+)$`).FindSubmatch(src)
		if m == nil {
			t.Errorf("proxy.py has no %s", name)
			continue
		}
		if got, _ := strconv.Atoi(string(m[1])); got != want || !internalPorts[got] {
			t.Errorf("%s: proxy.py %d, ports %d (internal: %v)", name, got, want, internalPorts[got])
		}
	}
}

func TestDockersDNSIsNotListed(t *testing.T) {
	out := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0B00007F:AFF7 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5001 1 0000000000000000 100 0 0 10 0
   1: 0100007F:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5002 1 0000000000000000 100 0 0 10 0
--
--
`
	if got, want := parseListening([]byte(out)), []Listening{{Port: 3000}}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
