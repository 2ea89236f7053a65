package ports

import (
	"os"
	"reflect"
	"regexp"
	"strconv"
	"testing"
)

func TestUsersOwnLeavesOutTheSandboxsMachinery(t *testing.T) {
	mine := func(port int, process string) Listening {
		return Listening{Port: port, Process: process, usersOwn: true}
	}
	ls := []Listening{mine(3000, "node"), {Port: 5900}, {Port: 6080}, mine(6080, "old image"), mine(9222, "chromium"),
		{Port: 15001}, {Port: 15053}, {Port: 15080}, mine(15100, ""), mine(15107, ""), mine(15108, "mine"),
		{Port: 40293}, {Port: 8600, Process: "python3"}, {Port: 45047}}
	forwarded := []Forwarded{{Port: 8600, HostPort: 3000}, {Port: 8601}}
	want := []Listening{mine(3000, "node"), mine(15108, "mine"), {Port: 8600, Process: "python3"}}
	if got := usersOwn(ls, forwarded); !reflect.DeepEqual(got, want) {
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
