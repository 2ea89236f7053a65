package engine_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/engine"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/tcptest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// containerIP is the container's address on its one network.
func containerIP(t *testing.T, api *dockertest.API, id string) string {
	t.Helper()
	for _, n := range inspectRaw(t, api, id).NetworkSettings.Networks {
		if n.IPAddress != "" {
			return n.IPAddress
		}
	}
	t.Fatalf("container %s has no address", id)
	return ""
}

// The servers a sandbox runs, with what makes each answer: the VNC server
// speaks first (and takes a client that does for a web browser), noVNC's
// web server answers a request.
var sandboxServers = []struct{ port, request, answer string }{
	{"5900", "", "RFB "},
	{"6080", "GET / HTTP/1.0\r\n\r\n", "HTTP/1."},
}

// readFrom runs, in the sandbox, a TCP connection to addr (host:port) that
// sends request and prints the first bytes it gets, giving up after 3 s;
// it returns them, or "" when nothing answered.
func readFrom(t *testing.T, docker service.Docker, id, addr, request string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	res, err := docker.Exec(context.Background(), id, service.ExecSpec{
		Cmd: []string{"timeout", "3", "bash", "-c",
			fmt.Sprintf(`exec 3<>/dev/tcp/%s/%s && printf '%s' >&3 && head -c 12 <&3`, host, port, request)},
		User:    "sandbox",
		Timeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(res.Stdout)
}

// TestSandboxesCannotReachEachOther: on Docker's default bridge, code in
// one sandbox got another's VNC banner and noVNC page by its address. On
// the sandboxes' own network it gets nothing, while it still reaches
// beyond its network and its published ports still answer on 127.0.0.1.
func TestSandboxesCannotReachEachOther(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	api := dockertest.NewAPI(t)
	ctx := context.Background()
	a, err := m.Start(ctx, dockertest.Project(t, docker))
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Start(ctx, dockertest.Project(t, docker))
	if err != nil {
		t.Fatal(err)
	}
	ipB := containerIP(t, api, b.ContainerID)
	for _, server := range sandboxServers {
		addr := net.JoinHostPort(ipB, server.port)
		// The probe works: B reaches its own server by its address.
		if got := readFrom(t, docker, b.ContainerID, addr, server.request); !strings.HasPrefix(got, server.answer) {
			t.Fatalf("B's own server at %s: %q, want %q", addr, got, server.answer)
		}
		if got := readFrom(t, docker, a.ContainerID, addr, server.request); got != "" {
			t.Errorf("sandbox A reached sandbox B's server at %s: %q", addr, got)
		}
	}
	t.Run("the client reports the container's address", func(t *testing.T) {
		// The direct routes dial it (ports/direct.go).
		if c, err := docker.InspectContainer(ctx, b.ContainerID); err != nil || c.IP != ipB {
			t.Errorf("IP %q, %v; want %s", c.IP, err, ipB)
		}
	})
	t.Run("published ports answer on 127.0.0.1", func(t *testing.T) {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", b.VNCPort), 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		banner := make([]byte, 4)
		if _, err := conn.Read(banner); err != nil || string(banner) != "RFB " {
			t.Errorf("B's VNC port from the host: %q, %v", banner, err)
		}
	})
	t.Run("the outside is reachable", func(t *testing.T) {
		addr := outsideListener(t)
		if got := readFrom(t, docker, a.ContainerID, addr, ""); got != "outside\n" {
			t.Errorf("sandbox A reaching %s beyond its network: %q", addr, got)
		}
	})
}

// outsideListener serves "outside\n" to every connection on the host's
// address towards the internet, which is not on any sandbox's network: a
// sandbox that reaches it can leave its network. It returns host:port.
func outsideListener(t *testing.T) string {
	t.Helper()
	route, err := net.Dial("udp", "192.0.2.1:9") // sends nothing: finds the route
	if err != nil {
		t.Skipf("no route out of this host: %v", err)
	}
	host := route.LocalAddr().(*net.UDPAddr).IP.String()
	route.Close()
	if u, _ := url.Parse(dockertest.Engine(t).Endpoint()); u == nil || u.Scheme != "unix" {
		t.Skip("the engine is not on this host: its containers may not reach this host's addresses")
	}
	return tcptest.Serve(t, net.JoinHostPort(host, "0"), func(c net.Conn) { c.Write([]byte("outside\n")) }).String()
}

// rawNetwork is what the tests read of `docker network inspect`.
type rawNetwork struct {
	ID      string `json:"Id"`
	Name    string
	Labels  map[string]string
	Options map[string]string
}

func networksNamed(t *testing.T, api *dockertest.API, name string) []rawNetwork {
	t.Helper()
	var all, named []rawNetwork
	api.GetJSON("/networks", &all)
	for _, n := range all {
		if n.Name == name {
			named = append(named, n)
		}
	}
	return named
}

// removeNetworksNamed removes the test's networks when it ends.
func removeNetworksNamed(t *testing.T, api *dockertest.API, name string) {
	t.Cleanup(func() {
		for _, n := range networksNamed(t, api, name) {
			api.Delete("/networks/" + n.ID)
		}
	})
}

// TestSandboxNetworkMadeOnce: sidecars that make the network at the same
// moment can make several of the name (Docker does not keep network names
// unique); they agree on one and the others go.
func TestSandboxNetworkMadeOnce(t *testing.T) {
	direct := dockertest.Engine(t)
	api := dockertest.NewAPI(t)
	scope := "test-net-" + randomHex(t)
	name := engine.NetworkName(scope)
	removeNetworksNamed(t, api, name)
	ctx := context.Background()
	const sidecars = 6
	ids := make([]string, sidecars)
	var wg sync.WaitGroup
	for i := range sidecars {
		wg.Go(func() {
			var err error
			if ids[i], err = engine.EnsureNetwork(engine.New(direct.Endpoint()), ctx, scope); err != nil {
				t.Errorf("sidecar %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	t.Logf("at once, %d sidecars got the networks %v", sidecars, ids)
	id, err := engine.EnsureNetwork(direct, ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	nets := networksNamed(t, api, name)
	if len(nets) != 1 || nets[0].ID != id {
		t.Fatalf("networks named %s: %+v, want only %s", name, nets, id)
	}
	n := nets[0]
	if n.Labels[service.LabelSandbox] != scope || n.Options["com.docker.network.bridge.enable_icc"] != "false" {
		t.Errorf("network %+v: want label %s=%s and inter-container traffic off", n, service.LabelSandbox, scope)
	}
	for i := range sidecars {
		if again, err := engine.EnsureNetwork(engine.New(direct.Endpoint()), ctx, scope); err != nil || again != id {
			t.Errorf("sidecar %d later: %s, %v; want %s", i, again, err, id)
		}
	}
}

// TestForeignNetworkIsRefused: a network of the name that the sidecar did
// not make (say, one a user made with containers talking freely) is not
// joined.
func TestForeignNetworkIsRefused(t *testing.T) {
	api := dockertest.NewAPI(t)
	scope := "test-net-" + randomHex(t)
	name := engine.NetworkName(scope)
	removeNetworksNamed(t, api, name)
	api.PostJSON("/networks/create", map[string]any{"Name": name, "Labels": map[string]string{service.LabelSandbox: scope}}, nil)
	_, err := engine.EnsureNetwork(dockertest.Engine(t), context.Background(), scope)
	if err == nil || !strings.Contains(err.Error(), "docker network rm "+name) {
		t.Errorf("err = %v, want a refusal that says how to remove %s", err, name)
	}
}
