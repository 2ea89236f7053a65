package egress_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/egress"
	"github.com/pilot-sandbox/pilot-sandbox/netpolicy"
)

// policyJudge is netpolicy's Judge as egress asks it: the two packages
// declare one contract apart (docs/network.md), so the types are copied
// across field by field.
type policyJudge struct{ j *netpolicy.Judge }

func (p policyJudge) Judge(ctx context.Context, r egress.Request) egress.Decision {
	req := netpolicy.Request{Project: r.Project, Names: r.Names, Addr: r.Addr, Port: r.Port, Protocol: r.Protocol}
	if r.Process != nil {
		req.Process = &netpolicy.Process{PID: r.Process.PID, Command: r.Process.Command}
	}
	if r.Cause != nil {
		c := netpolicy.Cause(*r.Cause)
		req.Cause = &c
	}
	d := p.j.Judge(ctx, req)
	return egress.Decision{Allow: d.Allow, Dial: d.Dial, By: d.By, Rule: d.Rule, Reason: d.Reason}
}

// fakeLayers is a user's policy and the host's addresses, for the real
// judge.
type fakeLayers struct {
	user  netpolicy.Config
	hosts []netip.Addr
}

func (l fakeLayers) User() (netpolicy.Config, error) { return l.user, nil }
func (fakeLayers) Repository(string) (netpolicy.Repository, bool, error) {
	return netpolicy.Repository{}, true, nil
}
func (fakeLayers) Kept(string) []netpolicy.Kept    { return nil }
func (l fakeLayers) HostAddrs(string) []netip.Addr { return l.hosts }
func (fakeLayers) Ask(context.Context, netpolicy.Question) netpolicy.Answer {
	return netpolicy.Answer{By: netpolicy.ByTimeout, Reason: "no one to ask"}
}

// fakeResolver resolves the test's names as the host's resolver would for
// a DNS rebinding attack: to the servers, to the host, to a private
// address.
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

// TestWithNetpolicysJudge: the enforcement joined to the real policy
// (netpolicy's Judge: fixed denials, rules, presets, private ranges): an
// allowed name reaches its server (whose private address the user
// allowed by IP); a name resolving to the host's own address, or to a
// private one no rule names, is refused with the judge's reason; a
// literal private address too.
func TestWithNetpolicysJudge(t *testing.T) {
	s := newSandboxBare(t)
	gateway := s.gateway()
	raw := fmt.Sprintf(`{"preset": "locked", "allow": ["allowed.test", "rebind-host.test", "rebind-private.test", "%s"]}`, s.server)
	user, problems := netpolicy.ParseConfig(json.RawMessage(raw))
	if len(problems) > 0 {
		t.Fatalf("policy: %+v", problems)
	}
	resolver := fakeResolver{
		"allowed.test":        {s.server},
		"rebind-host.test":    {gateway},
		"rebind-private.test": {netip.MustParseAddr("10.9.9.9")},
	}
	layers := fakeLayers{user: user, hosts: []netip.Addr{gateway}}
	s.judge = nil
	s.enforceWith(policyJudge{netpolicy.NewJudge(layers, resolver, layers)})
	out, _ := s.py(`
import urllib.request, urllib.error
for url in ("http://allowed.test:8080/joined", "http://rebind-host.test:8080/", "http://rebind-private.test:8080/", "http://10.9.9.9:8080/"):
    try:
        print(url, urllib.request.urlopen(url, timeout=10).read().decode().strip())
    except urllib.error.HTTPError as e:
        print(url, e.code, e.read().decode().strip())
`)
	t.Log(out)
	if !strings.Contains(out, "hello joined from allowed.test:8080") {
		t.Errorf("the allowed name did not reach its server:\n%s", out)
	}
	for _, url := range []string{"http://rebind-host.test:8080/ 403", "http://rebind-private.test:8080/ 403", "http://10.9.9.9:8080/ 403"} {
		if !strings.Contains(out, url) {
			t.Errorf("missing %q in:\n%s", url, out)
		}
	}
}
