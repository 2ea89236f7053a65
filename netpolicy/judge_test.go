package netpolicy

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// The resolver's world in every Judge test.
var world = map[string][]netip.Addr{
	"example.org":        addrs("93.184.215.14", "2606:2800::1"),
	"v6first.example":    addrs("2606:2800::2", "93.184.215.15"),
	"registry.npmjs.org": addrs("104.16.0.35"),
	"github.com":         addrs("140.82.121.4"),
	"a.example.com":      addrs("93.184.215.16"),
	"rebind.test":        addrs("127.0.0.1"),
	"gateway.test":       addrs("172.17.0.1"),
	"hostif.test":        addrs("192.168.1.20"),
	"metadata.test":      addrs("169.254.169.254"),
	"mapped.test":        addrs("::ffff:169.254.169.254"),
	"nat64.test":         addrs("64:ff9b::a9fe:a9fe"),
	"metadata6.test":     addrs("fd00:ec2::254"),
	"private.test":       addrs("10.1.2.3"),
	"cgnat.test":         addrs("100.64.1.1"),
	"ula.test":           addrs("fd12::1"),
	"mixed.test":         addrs("93.184.215.17", "10.1.2.3"),
	"tracker.test":       addrs("203.0.113.9"),
}

// hostAddrs: the sandbox network's gateway and an interface of the host.
var hostAddrs = addrs("172.17.0.1", "192.168.1.20")

func conn(port int, names ...string) Request {
	return Request{Project: "/p", Names: names, Port: port, Protocol: "tcp"}
}

func ip(addr string, port int, names ...string) Request {
	return Request{Project: "/p", Addr: netip.MustParseAddr(addr), Names: names, Port: port, Protocol: "tcp"}
}

type want struct {
	allow  bool
	by     string
	rule   string
	dial   []string
	reason string // part of the reason
	asked  string // the question's rule, "" for no question
}

func TestJudge(t *testing.T) {
	userAllow := func(r ...string) fakeLayers { return fakeLayers{user: Config{Allow: rules(r...)}} }
	preset := func(name string) fakeLayers { return fakeLayers{user: Config{Preset: name}} }
	yes := &Answer{Allow: true, By: ByUser}
	for _, tc := range []struct {
		name   string
		layers fakeLayers
		req    Request
		answer *Answer // nil: a question is answered "no answer"
		want   want
	}{
		// the preset dev, the default
		{"dev allows a registry over https", fakeLayers{}, conn(443, "registry.npmjs.org"),
			nil, want{allow: true, by: ByPreset, rule: "registry.npmjs.org:443", dial: []string{"104.16.0.35"}}},
		{"dev allows git over ssh to github", fakeLayers{}, conn(22, "github.com"),
			nil, want{allow: true, by: ByPreset, rule: "github.com:22", dial: []string{"140.82.121.4"}}},
		{"dev asks about a registry on another port", fakeLayers{}, conn(8080, "registry.npmjs.org"),
			yes, want{allow: true, by: ByUser, dial: []string{"104.16.0.35"}, asked: "registry.npmjs.org:8080"}},
		{"dev asks about an unknown host", fakeLayers{}, conn(443, "example.org"),
			yes, want{allow: true, by: ByUser, dial: []string{"93.184.215.14", "2606:2800::1"}, asked: "example.org:443"}},
		{"dev: no answer is a deny", fakeLayers{}, conn(443, "example.org"),
			nil, want{by: ByTimeout, reason: "example.org:443 was not allowed: no answer", asked: "example.org:443"}},
		{"dev: the user denies", fakeLayers{}, conn(443, "example.org"),
			&Answer{By: ByUser, Reason: "not today"}, want{by: ByUser, reason: `the user denied example.org:443, saying "not today"`, asked: "example.org:443"}},
		{"dev asks about a public IP", fakeLayers{}, ip("93.184.215.14", 443),
			yes, want{allow: true, by: ByUser, dial: []string{"93.184.215.14"}, asked: "93.184.215.14:443"}},
		// locked and open
		{"locked denies without asking", preset(PresetLocked), conn(443, "registry.npmjs.org"),
			yes, want{by: ByPreset, reason: `not allowed under the preset "locked"`}},
		{"locked with an allow rule", fakeLayers{user: Config{Preset: PresetLocked, Allow: rules("example.org:443")}}, conn(443, "example.org"),
			nil, want{allow: true, by: ByRule, rule: "example.org:443", dial: []string{"93.184.215.14", "2606:2800::1"}}},
		{"open allows an unknown host", preset(PresetOpen), conn(443, "example.org"),
			nil, want{allow: true, by: ByPreset, dial: []string{"93.184.215.14", "2606:2800::1"}}},
		{"open allows a public IP", preset(PresetOpen), ip("93.184.215.14", 80),
			nil, want{allow: true, by: ByPreset, dial: []string{"93.184.215.14"}}},
		// the order: deny, allow, ask
		{"deny wins over allow", fakeLayers{user: Config{Allow: rules("example.org"), Deny: rules("example.org:443")}}, conn(443, "example.org"),
			yes, want{by: ByRule, rule: "example.org:443", reason: "denied by the rule example.org:443 in the user's config.json"}},
		{"allow wins over ask", fakeLayers{user: Config{Allow: rules("*.example.com"), Ask: rules("a.example.com")}}, conn(443, "a.example.com"),
			nil, want{allow: true, by: ByRule, rule: "*.example.com", dial: []string{"93.184.215.16"}}},
		{"ask wins over the preset", fakeLayers{user: Config{Preset: PresetOpen, Ask: rules("example.org")}}, conn(443, "example.org"),
			yes, want{allow: true, by: ByUser, dial: []string{"93.184.215.14", "2606:2800::1"}, asked: "example.org:443"}},
		{"deny wins over the preset", fakeLayers{user: Config{Deny: rules("registry.npmjs.org")}}, conn(443, "registry.npmjs.org"),
			nil, want{by: ByRule, rule: "registry.npmjs.org"}},
		{"a port rule leaves other ports to the preset", fakeLayers{user: Config{Preset: PresetLocked, Allow: rules("example.org:443")}}, conn(80, "example.org"),
			nil, want{by: ByPreset}},
		{"a wildcard does not cover its base", fakeLayers{user: Config{Preset: PresetLocked, Allow: rules("*.example.org")}}, conn(443, "example.org"),
			nil, want{by: ByPreset}},
		// fixed denials no rule lifts
		{"metadata by IP", preset(PresetOpen), ip("169.254.169.254", 80),
			yes, want{by: ByFixed, reason: "never reachable from a sandbox: link-local"}},
		{"metadata by IP, allowed by a CIDR", userAllow("169.254.0.0/16"), ip("169.254.169.254", 80),
			yes, want{by: ByFixed}},
		{"metadata as IPv4-mapped IPv6", userAllow("::/0"), ip("::ffff:169.254.169.254", 80),
			yes, want{by: ByFixed}},
		{"metadata through NAT64", userAllow("::/0"), ip("64:ff9b::a9fe:a9fe", 80),
			yes, want{by: ByFixed}},
		{"metadata over IPv6", userAllow("fd00::/8"), ip("fd00:ec2::254", 80),
			yes, want{by: ByFixed}},
		{"the gateway, allowed by a CIDR", fakeLayers{user: Config{Allow: rules("172.16.0.0/12")}, host: hostAddrs}, ip("172.17.0.1", 8080),
			yes, want{by: ByFixed, reason: "an address of the host itself"}},
		{"a host interface", fakeLayers{user: Config{Allow: rules("192.168.0.0/16")}, host: hostAddrs}, ip("192.168.1.20", 5432),
			yes, want{by: ByFixed}},
		{"SMTP to an allowed host", userAllow("example.org"), conn(25, "example.org"),
			yes, want{by: ByFixed, reason: "port 25 (SMTP)"}},
		{"0.0.0.0", preset(PresetOpen), ip("0.0.0.0", 80), yes, want{by: ByFixed}},
		{"multicast", preset(PresetOpen), ip("239.1.1.1", 80), yes, want{by: ByFixed}},
		// private ranges
		{"a private IP under open", preset(PresetOpen), ip("10.1.2.3", 80),
			yes, want{by: ByPreset, reason: "is a private address (private (RFC 1918) 10.0.0.0/8)"}},
		{"a private IP allowed by its CIDR", userAllow("10.0.0.0/8"), ip("10.1.2.3", 80),
			nil, want{allow: true, by: ByRule, rule: "10.0.0.0/8", dial: []string{"10.1.2.3"}}},
		{"a private IP allowed with its port", userAllow("10.1.2.3:22"), ip("10.1.2.3", 22),
			nil, want{allow: true, by: ByRule, rule: "10.1.2.3:22", dial: []string{"10.1.2.3"}}},
		{"a private IP on another port", userAllow("10.1.2.3:22"), ip("10.1.2.3", 80),
			yes, want{by: ByPreset}},
		{"a private IP named by an ask", fakeLayers{user: Config{Ask: rules("192.168.0.0/16")}}, ip("192.168.5.5", 80),
			yes, want{allow: true, by: ByUser, dial: []string{"192.168.5.5"}, asked: "192.168.5.5:80"}},
		{"a loopback IP", preset(PresetOpen), ip("127.0.0.2", 80), yes, want{by: ByPreset, reason: "loopback"}},
		{"an IPv6 unique local IP", preset(PresetOpen), ip("fd12::1", 80), yes, want{by: ByPreset, reason: "unique local"}},
		// a name is judged by what it resolves to: rebinding
		{"a name resolving to loopback", preset(PresetOpen), conn(80, "rebind.test"),
			yes, want{by: ByPreset, reason: "rebind.test resolves to 127.0.0.1, which is denied"}},
		{"a name resolving to the gateway", fakeLayers{user: Config{Preset: PresetOpen}, host: hostAddrs}, conn(80, "gateway.test"),
			yes, want{by: ByFixed, reason: "gateway.test resolves to 172.17.0.1"}},
		{"a name resolving to a host interface", fakeLayers{user: Config{Preset: PresetOpen}, host: hostAddrs}, conn(80, "hostif.test"),
			yes, want{by: ByFixed}},
		{"a name resolving to metadata", userAllow("metadata.test"), conn(80, "metadata.test"),
			yes, want{by: ByFixed, reason: "link-local"}},
		{"a name resolving to mapped metadata", userAllow("mapped.test"), conn(80, "mapped.test"), yes, want{by: ByFixed}},
		{"a name resolving to NAT64 metadata", userAllow("nat64.test"), conn(80, "nat64.test"), yes, want{by: ByFixed}},
		{"a name resolving to IPv6 metadata", userAllow("metadata6.test"), conn(80, "metadata6.test"), yes, want{by: ByFixed}},
		{"a name resolving to 10.x", userAllow("private.test"), conn(80, "private.test"),
			yes, want{by: ByPreset, reason: "private.test resolves to 10.1.2.3"}},
		{"a name resolving to 10.x, its CIDR allowed", userAllow("private.test", "10.0.0.0/8"), conn(80, "private.test"),
			nil, want{allow: true, by: ByRule, rule: "private.test", dial: []string{"10.1.2.3"}}},
		{"a name resolving to 10.x, its CIDR asked", fakeLayers{user: Config{Allow: rules("private.test"), Ask: rules("10.0.0.0/8")}}, conn(80, "private.test"),
			nil, want{allow: true, by: ByRule, dial: []string{"10.1.2.3"}}},
		{"a name resolving to CGNAT", userAllow("cgnat.test"), conn(80, "cgnat.test"), yes, want{by: ByPreset}},
		{"a name resolving to IPv6 ULA", userAllow("ula.test"), conn(80, "ula.test"), yes, want{by: ByPreset}},
		{"a name resolving to a public and a private address", userAllow("mixed.test"), conn(80, "mixed.test"),
			yes, want{by: ByPreset, reason: "mixed.test resolves to 10.1.2.3"}},
		{"a name resolving to a denied address", fakeLayers{user: Config{Allow: rules("tracker.test"), Deny: rules("203.0.113.0/24")}}, conn(443, "tracker.test"),
			yes, want{by: ByRule, rule: "203.0.113.0/24"}},
		{"a name that does not resolve", userAllow("nowhere.test"), conn(443, "nowhere.test"),
			yes, want{by: ByFixed, reason: "nowhere.test does not resolve"}},
		{"IPv4 is dialed first", userAllow("v6first.example"), conn(443, "v6first.example"),
			nil, want{allow: true, by: ByRule, dial: []string{"93.184.215.15", "2606:2800::2"}}},
		// every name present is judged (domain fronting)
		{"an SNI the policy denies", fakeLayers{user: Config{Allow: rules("example.org"), Deny: rules("tracker.test")}}, conn(443, "example.org", "tracker.test"),
			yes, want{by: ByRule, rule: "tracker.test"}},
		{"an SNI the preset asks about", fakeLayers{}, conn(443, "registry.npmjs.org", "example.org"),
			yes, want{allow: true, by: ByUser, dial: []string{"104.16.0.35"}, asked: "example.org:443"}},
		{"a bare IP with an allowed SNI is judged as the IP too", userAllow("example.org"), ip("93.184.215.14", 443, "example.org"),
			nil, want{by: ByTimeout, asked: "93.184.215.14:443"}},
		// hostile requests
		{"an empty label", preset(PresetOpen), conn(443, "a..example.org"), yes, want{by: ByFixed, reason: "empty label"}},
		{"a NUL", preset(PresetOpen), conn(443, "example.org\x00.evil"), yes, want{by: ByFixed, reason: "the host name"}},
		{"non-ASCII from the sandbox", preset(PresetOpen), conn(443, "exаmple.org"), yes, want{by: ByFixed, reason: "not ASCII"}},
		{"a bad A-label", preset(PresetOpen), conn(443, "xn--zz.org"), yes, want{by: ByFixed, reason: "A-label"}},
		{"an over-long name", preset(PresetOpen), conn(443, strings.Repeat("a.", 200)+"org"), yes, want{by: ByFixed, reason: "longer than 253"}},
		{"a huge name", preset(PresetOpen), conn(443, strings.Repeat("a", 1<<20)), yes, want{by: ByFixed, reason: "longer than 253"}},
		{"too many names", preset(PresetOpen), conn(443, "a.org", "b.org", "c.org", "d.org", "e.org"), yes, want{by: ByFixed, reason: "at most 4"}},
		{"no name, no address", preset(PresetOpen), conn(443), yes, want{by: ByFixed}},
		{"a bad protocol", preset(PresetOpen), Request{Project: "/p", Names: []string{"example.org"}, Port: 443, Protocol: "sctp"}, yes, want{by: ByFixed, reason: "sctp"}},
		{"a bad port", preset(PresetOpen), conn(70000, "example.org"), yes, want{by: ByFixed}},
		{"upper case and a trailing dot are the same name", userAllow("example.org"), conn(443, "EXAMPLE.org."),
			nil, want{allow: true, by: ByRule, rule: "example.org", dial: []string{"93.184.215.14", "2606:2800::1"}}},
		// lookups of other types (port 0)
		{"a lookup of an allowed name", userAllow("example.org:443"), conn(0, "example.org"),
			nil, want{allow: true, by: ByRule, rule: "example.org:443"}},
		{"a lookup of a name that would be asked about", fakeLayers{}, conn(0, "example.org"),
			yes, want{by: ByPreset, reason: "allows outright"}},
		{"a lookup of a denied name", preset(PresetLocked), conn(0, "example.org"), yes, want{by: ByPreset}},
		// no network, and a policy that cannot be used
		{"network none", fakeLayers{user: Config{None: true, Preset: PresetOpen}}, conn(443, "example.org"),
			yes, want{by: ByFixed, reason: `network "none"`}},
		{"a repository's none", fakeLayers{user: Config{Preset: PresetOpen}, repo: Repository{None: true}}, conn(443, "example.org"),
			yes, want{by: ByFixed}},
		{"a config that cannot be used", fakeLayers{userErr: errors.New("network.allow: entry 1 bad")}, conn(443, "registry.npmjs.org"),
			yes, want{by: ByFixed, reason: "network.allow: entry 1 bad"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkJudge(t, tc.layers, tc.req, tc.answer, tc.want)
		})
	}
}

// checkJudge judges req under layers, answering a question with answer
// (nil: no answer in time), and compares with w.
func checkJudge(t *testing.T, layers fakeLayers, req Request, answer *Answer, w want) {
	t.Helper()
	asker := &fakeAsker{answer: Answer{By: ByTimeout, Reason: "no answer"}}
	if answer != nil {
		asker.answer = *answer
	}
	j := NewJudge(&layers, &fakeResolver{answers: world}, asker)
	d := j.Judge(context.Background(), req)
	var dial []string
	for _, a := range d.Dial {
		dial = append(dial, a.String())
	}
	if d.Allow != w.allow || d.By != w.by || (w.rule != "" && d.Rule != w.rule) || !slices.Equal(dial, w.dial) {
		t.Errorf("decision = %+v\nwant allow %v by %q rule %q dial %v", d, w.allow, w.by, w.rule, w.dial)
	}
	if !strings.Contains(d.Reason, w.reason) {
		t.Errorf("reason = %q, want it to say %q", d.Reason, w.reason)
	}
	if !d.Allow && d.Reason == "" {
		t.Errorf("a denial without a reason: %+v", d)
	}
	if d.Allow && len(d.Dial) == 0 && req.Port != 0 {
		t.Errorf("an allow with nothing to dial: %+v", d)
	}
	var asked string
	if len(asker.asked) > 0 {
		asked = asker.asked[0].Rule.String()
	}
	if asked != w.asked {
		t.Errorf("asked %q, want %q (questions: %+v)", asked, w.asked, asker.asked)
	}
}

// TestJudgeSources: the user's kept and session decisions and the
// repository's part of the policy, each in its place in the order.
func TestJudgeSources(t *testing.T) {
	kept := func(rule string, allow, session bool) []Kept {
		return []Kept{{Rule: mustRule(rule), Allow: allow, Session: session, DecidedAt: time.UnixMilli(1)}}
	}
	for _, tc := range []struct {
		name   string
		layers fakeLayers
		req    Request
		want   want
	}{
		{"a kept allow", fakeLayers{kept: kept("example.org:443", true, false)}, conn(443, "example.org"),
			want{allow: true, by: ByUser, rule: "example.org:443", dial: []string{"93.184.215.14", "2606:2800::1"}}},
		{"a session allow", fakeLayers{kept: kept("example.org:443", true, true)}, conn(443, "example.org"),
			want{allow: true, by: ByUser, dial: []string{"93.184.215.14", "2606:2800::1"}}},
		{"a kept deny", fakeLayers{kept: kept("registry.npmjs.org:443", false, false)}, conn(443, "registry.npmjs.org"),
			want{by: ByUser, reason: "pilot-sandbox net forget registry.npmjs.org:443"}},
		{"a kept deny beats the config's allow", fakeLayers{user: Config{Allow: rules("example.org")}, kept: kept("example.org", false, false)}, conn(443, "example.org"),
			want{by: ByUser}},
		{"a repository's deny narrows", fakeLayers{repo: Repository{Deny: rules("registry.npmjs.org")}}, conn(443, "registry.npmjs.org"),
			want{by: ByRule, reason: "the project's .pilot/settings.json (sandbox.network.deny)"}},
		{"a repository's stricter preset applies without approval", fakeLayers{repo: Repository{Preset: PresetLocked}}, conn(443, "registry.npmjs.org"),
			want{by: ByPreset, reason: `preset "locked"`}},
		{"a repository's wider preset waits for approval", fakeLayers{repo: Repository{Preset: PresetOpen}}, conn(443, "example.org"),
			want{by: ByTimeout, asked: "example.org:443"}},
		{"a repository's wider preset, approved", fakeLayers{repo: Repository{Preset: PresetOpen}, approved: true}, conn(443, "example.org"),
			want{allow: true, by: ByPreset, dial: []string{"93.184.215.14", "2606:2800::1"}}},
		{"a repository's allow waits for approval", fakeLayers{user: Config{Preset: PresetLocked}, repo: Repository{Allow: rules("example.org")}}, conn(443, "example.org"),
			want{by: ByPreset}},
		{"a repository's allow, approved", fakeLayers{user: Config{Preset: PresetLocked}, repo: Repository{Allow: rules("example.org")}, approved: true}, conn(443, "example.org"),
			want{allow: true, by: ByRule, dial: []string{"93.184.215.14", "2606:2800::1"}}},
		{"a repository's approved allow does not lift the user's deny", fakeLayers{user: Config{Deny: rules("example.org")}, repo: Repository{Allow: rules("example.org")}, approved: true}, conn(443, "example.org"),
			want{by: ByRule, reason: "config.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkJudge(t, tc.layers, tc.req, nil, tc.want)
		})
	}
}

// TestJudgeQuestion: what the user is asked carries the destination, the
// other name, the process and the cause, and the policy's timeout.
func TestJudgeQuestion(t *testing.T) {
	asker := &fakeAsker{answer: Answer{Allow: true, By: ByUser}}
	layers := &fakeLayers{user: Config{AskTimeout: 5 * time.Second}}
	j := NewJudge(layers, &fakeResolver{answers: world}, asker)
	req := conn(443, "example.org", "a.example.com")
	req.Process = &Process{PID: 42, Command: "curl https://example.org"}
	req.Cause = &Cause{Tool: "sandbox_exec", RequestID: "7"}
	layers.user.Allow = rules("a.example.com")
	if d := j.Judge(context.Background(), req); !d.Allow {
		t.Fatalf("decision = %+v", d)
	}
	if len(asker.asked) != 1 {
		t.Fatalf("questions = %+v, want one", asker.asked)
	}
	q := asker.asked[0]
	if q.Host != "example.org" || q.Port != 443 || q.Protocol != "tcp" || q.SNI != "a.example.com" ||
		q.Process.PID != 42 || q.Cause.Tool != "sandbox_exec" || q.Timeout != 5*time.Second || q.Project != "/p" {
		t.Errorf("question = %+v", q)
	}
	if want := "connect to example.org:443 (tcp) from `curl https://example.org`"; q.Summary != want {
		t.Errorf("summary = %q, want %q", q.Summary, want)
	}
}

// TestJudgeLearnsOnlyToAsk: the hints are looked up for a question, never
// for a connection the policy decides (which must not wait for them).
func TestJudgeLearnsOnlyToAsk(t *testing.T) {
	asker := &fakeAsker{answer: Answer{By: ByUser, Reason: "no"}}
	layers := &fakeLayers{user: Config{Allow: rules("allowed.example.com"), Deny: rules("denied.example.com")}}
	j := NewJudge(layers, &fakeResolver{answers: world}, asker)
	learned := 0
	learn := func(context.Context) (*Process, *Cause) {
		learned++
		return &Process{PID: 9, Command: "git fetch"}, &Cause{Task: "t1"}
	}
	for _, host := range []string{"allowed.example.com", "denied.example.com"} {
		req := conn(443, host)
		req.Learn = learn
		j.Judge(context.Background(), req)
	}
	if learned != 0 {
		t.Fatalf("learned %d times for connections the policy decided", learned)
	}
	req := conn(443, "example.org")
	req.Learn = learn
	j.Judge(context.Background(), req)
	if learned != 1 || len(asker.asked) != 1 {
		t.Fatalf("learned %d times, asked %d", learned, len(asker.asked))
	}
	if q := asker.asked[0]; q.Process == nil || q.Process.PID != 9 || q.Cause == nil || q.Cause.Task != "t1" {
		t.Errorf("question = %+v", q)
	}
}

// settlingAsker changes the policy while it is asked (as the user does
// with pilot-sandbox net allow or deny) and answers with what Settled says.
type settlingAsker struct {
	layers *fakeLayers
	change func(*fakeLayers)
}

func (a *settlingAsker) Ask(ctx context.Context, q Question) Answer {
	if ans, ok := q.Settled(); ok {
		return Answer{By: "settled too soon: " + ans.By}
	}
	a.change(a.layers)
	ans, ok := q.Settled()
	if !ok {
		return Answer{By: ByTimeout, Reason: "not settled"}
	}
	return ans
}

// TestJudgeSettledWhileAsking: a question the user settles by changing
// the policy ends as the policy now says.
func TestJudgeSettledWhileAsking(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*fakeLayers)
		want   want
	}{
		{"allowed by a rule", func(l *fakeLayers) { l.user.Allow = rules("example.org:443") },
			want{allow: true, by: ByRule, rule: "example.org:443", dial: []string{"93.184.215.14", "2606:2800::1"}}},
		{"denied by a rule", func(l *fakeLayers) { l.user.Deny = rules("example.org") },
			want{by: ByRule, rule: "example.org", reason: "example.org:443 is denied by the rule example.org in the user's config.json"}},
		{"the preset changed", func(l *fakeLayers) { l.user.Preset = PresetOpen },
			want{allow: true, by: ByPreset, dial: []string{"93.184.215.14", "2606:2800::1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			layers := &fakeLayers{}
			j := NewJudge(layers, &fakeResolver{answers: world}, &settlingAsker{layers: layers, change: tc.change})
			d := j.Judge(context.Background(), conn(443, "example.org"))
			var dial []string
			for _, a := range d.Dial {
				dial = append(dial, a.String())
			}
			w := tc.want
			if d.Allow != w.allow || d.By != w.by || d.Rule != w.rule || !slices.Equal(dial, w.dial) || !strings.Contains(d.Reason, w.reason) {
				t.Errorf("decision = %+v, want %+v", d, w)
			}
		})
	}
}
