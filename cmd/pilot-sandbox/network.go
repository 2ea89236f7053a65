package main

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/netpolicy"
	"github.com/pilot-sandbox/pilot-sandbox/permission"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// network is what a process knows of the sandboxes' network policy: the
// permission broker (its questions and the user's decisions), the Judge
// (the policy applied to a connection) and the connection log. It serves
// rpc's Permissions and NetworkPolicy, with project paths made canonical.
type network struct {
	broker *permission.Broker
	judge  *netpolicy.Judge
	*netLog
}

// policySource is where the user's and the project's parts of the policy
// come from; *service.Manager is one.
type policySource interface {
	UserNetwork() (netpolicy.Config, error)
	RepositoryNetwork(path string) (netpolicy.Repository, bool, error)
}

func newNetwork(src policySource, stateDir string) *network {
	return buildNetwork(src, stateDir, net.DefaultResolver, interfaceAddrs)
}

func buildNetwork(src policySource, stateDir string, resolver netpolicy.Resolver, hostAddrs func() []netip.Addr) *network {
	broker := permission.New(projectfs.NewDecisions(stateDir))
	layers := &netLayers{src: src, broker: broker, hostAddrs: hostAddrs}
	return &network{
		broker: broker,
		judge:  netpolicy.NewJudge(layers, resolver, netAsker{broker}),
		netLog: newNetLog(projectfs.NewNetLog(stateDir)),
	}
}

// followStops tells the broker of each sandbox that stops (or goes), so
// that its session decisions end and its waiting questions are denied,
// until events is closed.
func (n *network) followStops(events <-chan service.Event) {
	for ev := range events {
		if ev.Kind != service.EventState {
			continue
		}
		if st := ev.State; st == nil || st.Status == service.StatusStopped || st.Status == service.StatusError {
			n.broker.Stopped(ev.Project)
		}
	}
}

// close writes the log's last entries.
func (n *network) close() { n.netLog.close() }

// Listen hears the questions of the project ("" for every one).
func (n *network) Listen(project string, fn func(permission.Event)) (stop func()) {
	return n.broker.Listen(project, fn)
}

// Answer answers a waiting question.
func (n *network) Answer(id string, a permission.Answer) error { return n.broker.Answer(id, a) }

// List is what waits for the project's answers, and its decisions.
func (n *network) List(path string) ([]permission.Question, []permission.Rule, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return nil, nil, err
	}
	pending, rules := n.broker.List(project)
	return pending, rules, nil
}

// Forget removes the project's decisions on rule, written as any rule
// (Example.org:443 is example.org:443).
func (n *network) Forget(path, rule string) (int, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return 0, err
	}
	if r, err := netpolicy.ParseRule(rule); err == nil {
		rule = r.String()
	}
	return n.broker.Forget(project, rule)
}

// Policy is the network policy in force for the project, as shown.
func (n *network) Policy(path string) (netpolicy.View, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return netpolicy.View{}, err
	}
	p, err := n.judge.Policy(project)
	if err != nil {
		return netpolicy.View{}, err
	}
	return p.View(), nil
}

// Log is the project's last limit connections.
func (n *network) Log(path string, limit int) ([]projectfs.NetLogEntry, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return nil, err
	}
	return n.netLog.Log(project, limit)
}

// netLayers gives the Judge the policy's parts at every connection, so
// each is kept between connections: the user's config is read again by
// service when it changes; the project's settings are read again after
// repoFresh; the decisions are parsed again when the broker's version of
// them changes.
type netLayers struct {
	src       policySource
	broker    *permission.Broker
	hostAddrs func() []netip.Addr

	mu    sync.Mutex // guards repos and kept
	repos map[string]repoLayer
	kept  map[string]keptLayer
}

// repoFresh is how long a project's settings are taken as read: an edit
// of .pilot/settings.json applies to connections from then on.
const repoFresh = time.Second

type repoLayer struct {
	at       time.Time
	repo     netpolicy.Repository
	approved bool
	err      error
}

type keptLayer struct {
	version uint64
	kept    []netpolicy.Kept
}

func (l *netLayers) User() (netpolicy.Config, error) { return l.src.UserNetwork() }

func (l *netLayers) Repository(project string) (netpolicy.Repository, bool, error) {
	l.mu.Lock()
	r, ok := l.repos[project]
	l.mu.Unlock()
	if ok && time.Since(r.at) < repoFresh {
		return r.repo, r.approved, r.err
	}
	r = repoLayer{at: time.Now()}
	r.repo, r.approved, r.err = l.src.RepositoryNetwork(project)
	l.mu.Lock()
	if l.repos == nil {
		l.repos = map[string]repoLayer{}
	}
	l.repos[project] = r
	l.mu.Unlock()
	return r.repo, r.approved, r.err
}

// Kept are the project's network decisions, kept and for the session, as
// rules. One that is not a rule (written by hand into the state) is
// skipped.
func (l *netLayers) Kept(project string) []netpolicy.Kept {
	rules, version := l.broker.Decisions(project)
	l.mu.Lock()
	defer l.mu.Unlock()
	if k, ok := l.kept[project]; ok && k.version == version {
		return k.kept
	}
	var kept []netpolicy.Kept
	for _, d := range rules {
		r, err := netpolicy.ParseRule(d.Rule)
		if d.Kind != permission.KindNetwork || err != nil {
			continue
		}
		kept = append(kept, netpolicy.Kept{Rule: r, Allow: d.Allow(), Session: d.Source == permission.SourceSession,
			Reason: d.Reason, DecidedAt: time.UnixMilli(d.DecidedAt)})
	}
	if l.kept == nil {
		l.kept = map[string]keptLayer{}
	}
	l.kept[project] = keptLayer{version: version, kept: kept}
	return kept
}

// HostAddrs are the host's own addresses: for a local engine the sandbox
// network's gateway is one of them (its bridge's address).
func (l *netLayers) HostAddrs(string) []netip.Addr { return l.hostAddrs() }

var (
	hostAddrsMu   sync.Mutex // guards hostAddrsAt and hostAddrsList
	hostAddrsAt   time.Time
	hostAddrsList []netip.Addr
)

// interfaceAddrs are the addresses of the host's interfaces, read again
// every 10 s (an interface comes and goes with a VPN or a Docker network).
func interfaceAddrs() []netip.Addr {
	hostAddrsMu.Lock()
	defer hostAddrsMu.Unlock()
	if time.Since(hostAddrsAt) < 10*time.Second {
		return hostAddrsList
	}
	hostAddrsAt, hostAddrsList = time.Now(), nil
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			hostAddrsList = append(hostAddrsList, p.Addr())
		}
	}
	return hostAddrsList
}

// netAsker asks the Judge's questions through the permission broker.
type netAsker struct{ broker *permission.Broker }

// networkDetail is a network question's detail (docs/protocol.md,
// "Permission requests").
type networkDetail struct {
	Host     string             `json:"host"`
	Port     int                `json:"port"`
	Protocol string             `json:"protocol"`
	SNI      string             `json:"sni,omitempty"`
	Process  *netpolicy.Process `json:"process,omitempty"`
}

func (a netAsker) Ask(ctx context.Context, q netpolicy.Question) netpolicy.Answer {
	r := permission.Request{
		Project: q.Project, Kind: permission.KindNetwork, Rule: q.Rule.String(), Summary: q.Summary,
		Detail:  networkDetail{Host: q.Host, Port: q.Port, Protocol: q.Protocol, SNI: q.SNI, Process: q.Process},
		Timeout: q.Timeout,
	}
	if q.Cause != nil {
		r.Cause = q.Cause
	}
	if q.Settled != nil {
		r.Settled = func() (permission.Answer, bool) {
			s, ok := q.Settled()
			return permission.Answer{Decision: allowOnceOr(s.Allow), By: s.By, Rule: s.Rule, Reason: s.Reason}, ok
		}
	}
	ans := a.broker.Ask(ctx, r)
	return netpolicy.Answer{Allow: ans.Allowed(), By: ans.By, Rule: ans.Rule, Reason: ans.Reason}
}

func allowOnceOr(allow bool) string {
	if allow {
		return permission.AllowOnce
	}
	return permission.Deny
}
