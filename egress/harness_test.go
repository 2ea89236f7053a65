package egress_test

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/egress"
	"github.com/pilot-sandbox/pilot-sandbox/engine"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/testlog"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// tableJudge is a judge of the tests' own, until netpolicy's joins it:
// names and addresses it allows (with the address to dial), names it
// asks about (over a channel), and everything else denied.
type tableJudge struct {
	mu    sync.Mutex // guards the fields below
	allow map[string][]netip.Addr
	ask   map[string]chan egress.Decision
	asked chan egress.Request // hears every ask
	seen  []egress.Request
	// resolved are allowed names dialled at what the host resolves.
	resolved []string
	// askTimeout, when set, bounds a question as netpolicy's askTimeout.
	askTimeout time.Duration
}

func newTableJudge() *tableJudge {
	return &tableJudge{allow: map[string][]netip.Addr{}, ask: map[string]chan egress.Decision{}, asked: make(chan egress.Request, 16)}
}

func (j *tableJudge) Allow(key string, dial ...netip.Addr) {
	j.mu.Lock()
	j.allow[key] = dial
	j.mu.Unlock()
}

// AllowResolved allows name, dialling what the host's resolver says it is
// (IPv4: the sandbox has no IPv6 way out), looked up when it is judged.
func (j *tableJudge) AllowResolved(name string) {
	j.mu.Lock()
	j.resolved = append(j.resolved, name)
	j.mu.Unlock()
	j.Allow(name)
}

// Ask makes key asked about; the answer is what the test sends on the
// channel it returns.
func (j *tableJudge) Ask(key string) chan egress.Decision {
	ch := make(chan egress.Decision, 1)
	j.mu.Lock()
	j.ask[key] = ch
	j.mu.Unlock()
	return ch
}

func (j *tableJudge) Judge(ctx context.Context, r egress.Request) egress.Decision {
	j.mu.Lock()
	j.seen = append(j.seen, r)
	keys := slices.Clone(r.Names)
	if r.Addr.IsValid() {
		keys = append(keys, r.Addr.String())
	}
	var dial []netip.Addr
	denied := ""
	for _, k := range keys {
		addrs, ok := j.allow[k]
		if !ok && denied == "" {
			denied = k
		}
		if dial == nil {
			dial = addrs
		}
	}
	answer := j.ask[keys[0]]
	resolve := len(keys) > 0 && slices.Contains(j.resolved, keys[0])
	j.mu.Unlock()
	if resolve {
		dial, _ = net.DefaultResolver.LookupNetIP(ctx, "ip4", keys[0])
	}
	if len(dial) == 0 && r.Addr.IsValid() {
		dial = []netip.Addr{r.Addr}
	}
	deny := egress.Decision{By: "rule", Reason: fmt.Sprintf("pilot-sandbox blocked %s:%d; ask the user: pilot-sandbox net allow %s", denied, r.Port, denied)}
	switch {
	case denied == "":
		return egress.Decision{Allow: true, Dial: dial, By: "rule"}
	case answer != nil:
		if r.Learn != nil { // as netpolicy's judge does before it asks
			r.Process, r.Cause = r.Learn(ctx)
		}
		j.asked <- r
		if j.askTimeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, j.askTimeout)
			defer cancel()
		}
		select {
		case d := <-answer:
			return d
		case <-ctx.Done():
			deny.By, deny.Reason = "timeout", fmt.Sprintf("pilot-sandbox blocked %s:%d: no answer", denied, r.Port)
			return deny
		}
	}
	return deny
}

func (j *tableJudge) requests() []egress.Request {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.seen)
}

// sandboxNet is a running sandbox with its network enforced by an
// Enforcer of the test, and a server container beside it.
type sandboxNet struct {
	t       testing.TB
	m       *service.Manager
	docker  *engine.Client
	api     *dockertest.API
	project string
	id      string
	e       *egress.Enforcer
	judge   *tableJudge
	server  netip.Addr // the servers' container (testdata/servers.py)
	image   string
}

func newSandboxNet(t testing.TB) *sandboxNet {
	s := newSandboxBare(t)
	s.enforce()
	return s
}

// enforce starts the test's enforcer on the sandbox, with its table judge.
func (s *sandboxNet) enforce() {
	s.t.Helper()
	s.enforceWith(s.judge)
}

// enforceWith starts an enforcer on the sandbox asking judge.
func (s *sandboxNet) enforceWith(judge egress.Judge) {
	s.t.Helper()
	s.e = egress.New(s.docker, egress.Config{Image: s.image, Scope: dockertest.TestScope, Judge: judge,
		Logger: testlog.New(s.t)})
	s.t.Cleanup(s.e.Close)
	if err := s.e.Start(context.Background(), s.project, s.id); err != nil {
		s.t.Fatal(err)
	}
}

// newSandboxBare is a running sandbox and the servers beside it, with no
// enforcer yet.
func newSandboxBare(t testing.TB) *sandboxNet {
	return newSandboxBareWith(t, nil)
}

// newSandboxNetWith is newSandboxNet with the project's files set up by
// prepare before the start (a browser image, say).
func newSandboxNetWith(t testing.TB, prepare func(project string)) *sandboxNet {
	s := newSandboxBareWith(t, prepare)
	s.enforce()
	return s
}

func newSandboxBareWith(t testing.TB, prepare func(project string)) *sandboxNet {
	m, docker := dockertest.Manager(t, nil)
	s := &sandboxNet{t: t, m: m, docker: docker, api: dockertest.NewAPI(t), judge: newTableJudge(),
		image: cmp.Or(os.Getenv("PILOT_IMAGE"), images.DefaultTag)}
	s.project = dockertest.Project(t, docker)
	if prepare != nil {
		prepare(s.project)
	}
	st, err := m.Start(context.Background(), s.project)
	if err != nil {
		t.Fatal(err)
	}
	s.id = st.ContainerID
	s.server = s.startServers()
	return s
}

// startServers runs testdata/servers.py in a container on the sandbox's
// network and returns its address there.
func (s *sandboxNet) startServers() netip.Addr {
	t := s.t
	script, err := os.ReadFile("testdata/servers.py")
	if err != nil {
		t.Fatal(err)
	}
	// The sandboxes' own network keeps its containers apart (no
	// inter-container traffic): the servers and the sandbox meet on a
	// network of the test's own.
	var net struct{ ID string }
	network := fmt.Sprintf("pilot-egress-test-%d", time.Now().UnixNano())
	s.api.PostJSON("/networks/create", map[string]any{"Name": network, "Labels": map[string]string{"pilot.test": "egress"}}, &net)
	t.Cleanup(func() { s.api.Delete("/networks/" + net.ID) })
	s.api.PostJSON("/networks/"+net.ID+"/connect", map[string]any{"Container": s.id}, nil)
	t.Cleanup(func() { dockertest.RemoveSandbox(t, s.docker, s.project) })
	cert, key := serverCertificate(t)
	var made struct{ ID string }
	s.api.PostJSON("/containers/create", map[string]any{
		"Image": s.image, "User": "0", "Entrypoint": []string{"python3", "-u", "-c", string(script)},
		"Env":        []string{"SERVER_CERT=" + cert, "SERVER_KEY=" + key},
		"Labels":     map[string]string{"pilot.test": "egress"},
		"HostConfig": map[string]any{"NetworkMode": network, "AutoRemove": true},
	}, &made)
	t.Cleanup(func() { s.api.Delete("/containers/" + made.ID + "?force=true") })
	s.api.Post("/containers/" + made.ID + "/start")
	var in struct {
		NetworkSettings struct {
			Networks map[string]struct{ IPAddress string }
		}
	}
	s.api.GetJSON("/containers/"+made.ID+"/json", &in)
	addr := netip.MustParseAddr(in.NetworkSettings.Networks[network].IPAddress)
	s.pollExec("the servers answer", fmt.Sprintf(`python3 -c 'import socket; socket.create_connection(("%s", 8080), 1)'`, addr), false)
	return addr
}

// exec runs a shell command in the sandbox as the sidecar's execs run,
// with the proxy's environment; it returns stdout and stderr together.
func (s *sandboxNet) exec(command string) (string, int) {
	s.t.Helper()
	env := map[string]string{}
	if s.e != nil {
		for _, kv := range s.e.ExecEnv(egress.Cause{Exec: command}) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	}
	out, err := s.m.Exec(context.Background(), s.project, service.ExecRequest{Command: command, Env: env, Timeout: 60 * time.Second})
	if err != nil {
		s.t.Fatal(err)
	}
	return out.Stdout + out.Stderr, out.ExitCode
}

// execAs runs a shell command as user (e.g. "0" for apt-get) with the
// proxy's environment.
func (s *sandboxNet) execAs(user, command string) (string, int) {
	s.t.Helper()
	res, err := s.m.ExecArgv(context.Background(), s.project, service.ExecSpec{
		Cmd: []string{"bash", "-c", command}, User: user, Env: s.e.ExecEnv(egress.Cause{Exec: command}), Timeout: 5 * time.Minute,
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return string(res.Stdout) + string(res.Stderr), res.ExitCode
}

// pollExec runs command until it exits 0, for up to 20 s.
func (s *sandboxNet) pollExec(what, command string, withProxy bool) {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := s.m.Exec(context.Background(), s.project, service.ExecRequest{Command: command, Timeout: 10 * time.Second})
		if err == nil && out.ExitCode == 0 {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: not so after 20 s: %v %s%s", what, err, out.Stdout, out.Stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// py runs a Python program in the sandbox with the proxy's environment.
func (s *sandboxNet) py(program string) (string, int) {
	s.t.Helper()
	return s.exec("python3 - <<'PY'\n" + program + "\nPY")
}

// serverCertificate is a self-signed certificate for the TLS server, PEM.
func serverCertificate(t testing.TB) (cert, key string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "egress test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"allowed.test"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}))
}

// rejudge replaces the sandbox's enforcer with one asking judge, once the
// first has let go.
func (s *sandboxNet) rejudge(judge egress.Judge) {
	s.t.Helper()
	s.e.Close()
	s.pollExec("the proxy ended", `! python3 -c 'import socket; socket.create_connection(("127.0.0.1", 15080), 1)'`, false)
	s.e = egress.New(s.docker, egress.Config{Image: s.image, Scope: dockertest.TestScope, Judge: judge,
		Logger: testlog.New(s.t)})
	s.t.Cleanup(s.e.Close)
	if err := s.e.Start(context.Background(), s.project, s.id); err != nil {
		s.t.Fatal(err)
	}
	if carrying, why := s.e.Carrier(s.id); !carrying {
		s.t.Fatalf("the new enforcer does not carry the sandbox: %s", why)
	}
}

// gateway is the host's address on the sandbox's own network.
func (s *sandboxNet) gateway() netip.Addr {
	var c struct {
		NetworkSettings struct {
			Networks map[string]struct{ Gateway string }
		}
	}
	s.api.GetJSON("/containers/"+s.id+"/json", &c)
	for name, n := range c.NetworkSettings.Networks {
		if strings.HasPrefix(name, "pilot-sandbox") {
			return netip.MustParseAddr(n.Gateway)
		}
	}
	s.t.Fatal("the sandbox is on no network of its own")
	return netip.Addr{}
}
