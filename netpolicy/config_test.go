package netpolicy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		name   string
		raw    string
		want   string // the config, as configText writes it
		keys   []string
		reason string
	}{
		{name: "none", raw: `"none"`, want: "none"},
		{name: "default", raw: `"default"`, want: "preset= allow=[] deny=[] ask=[] timeout=0s"},
		{name: "empty", raw: `{}`, want: "preset= allow=[] deny=[] ask=[] timeout=0s"},
		{name: "every key", raw: `{"preset": "locked", "allow": ["Example.org", "*.example.com:443", "10.1.2.3:22"],
			"deny": ["tracker.example.net"], "ask": ["192.168.0.0/16"], "askTimeout": "90s"}`,
			want: "preset=locked allow=[example.org *.example.com:443 10.1.2.3:22] deny=[tracker.example.net] ask=[192.168.0.0/16] timeout=1m30s"},
		{name: "a unicode name", raw: `{"allow": ["bücher.de"]}`, want: "preset= allow=[xn--bcher-kva.de] deny=[] ask=[] timeout=0s"},
		{name: "not an object", raw: `4`, keys: []string{"network"}, reason: "must be an object"},
		{name: "another string", raw: `"open"`, keys: []string{"network"}, reason: `or "none"`},
		{name: "an unknown preset", raw: `{"preset": "balanced"}`, keys: []string{"network.preset"}, reason: `must be "open", "dev" or "locked"; it is "balanced"`},
		{name: "a rule that is not one", raw: `{"allow": ["example.org", "a..b"]}`, keys: []string{"network.allow"}, reason: `entry 2: "a..b" has an empty label`},
		{name: "rules not a list", raw: `{"deny": "example.org"}`, keys: []string{"network.deny"}, reason: "must be a list of strings"},
		{name: "a list of numbers", raw: `{"ask": [1]}`, keys: []string{"network.ask"}},
		{name: "askTimeout too short", raw: `{"askTimeout": "100ms"}`, keys: []string{"network.askTimeout"}, reason: "from 1s to 10m0s"},
		{name: "askTimeout too long", raw: `{"askTimeout": "1h"}`, keys: []string{"network.askTimeout"}},
		{name: "askTimeout a number", raw: `{"askTimeout": 60}`, keys: []string{"network.askTimeout"}},
		{name: "an unknown key", raw: `{"allowed": []}`, keys: []string{"network.allowed"}, reason: "is not a known key (known: preset, allow, deny, ask, askTimeout)"},
		{name: "every problem named", raw: `{"preset": 1, "allow": ["*"], "deny": ["x:0"]}`,
			keys: []string{"network.allow", "network.deny", "network.preset"}},
		{name: "too many rules", raw: manyRules(MaxRules + 1), keys: []string{"network.allow"}, reason: "at most 500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, problems := ParseConfig(json.RawMessage(tc.raw))
			var keys []string
			var reasons []string
			for _, p := range problems {
				keys = append(keys, p.Key)
				reasons = append(reasons, p.Reason)
			}
			if !slices.Equal(keys, tc.keys) {
				t.Fatalf("problems = %+v, want keys %v", problems, tc.keys)
			}
			if !strings.Contains(strings.Join(reasons, "; "), tc.reason) {
				t.Errorf("problems = %+v, want one to say %q", problems, tc.reason)
			}
			if problems == nil && configText(c) != tc.want {
				t.Errorf("config = %s, want %s", configText(c), tc.want)
			}
			if problems != nil && (c.None || c.Preset != "" || c.Allow != nil) {
				t.Errorf("a config with problems gave %+v: a policy is all or nothing", c)
			}
		})
	}
}

func manyRules(n int) string {
	r := make([]string, n)
	for i := range r {
		r[i] = fmt.Sprintf("h%d.example.org", i)
	}
	data, _ := json.Marshal(map[string]any{"allow": r})
	return string(data)
}

func configText(c Config) string {
	if c.None {
		return "none"
	}
	text := func(rs []Rule) string {
		s := make([]string, len(rs))
		for i, r := range rs {
			s[i] = r.String()
		}
		return "[" + strings.Join(s, " ") + "]"
	}
	return fmt.Sprintf("preset=%s allow=%s deny=%s ask=%s timeout=%s", c.Preset, text(c.Allow), text(c.Deny), text(c.Ask), c.AskTimeout)
}

func TestParseRepository(t *testing.T) {
	r, problems := ParseRepository(json.RawMessage(`{"preset": "locked", "deny": ["x.org"], "allow": ["api.example.com:443"]}`))
	if problems != nil || r.Preset != PresetLocked || len(r.Deny) != 1 || len(r.Allow) != 1 {
		t.Errorf("ParseRepository = %+v, %v", r, problems)
	}
	if r, problems := ParseRepository(json.RawMessage(`"none"`)); problems != nil || !r.None {
		t.Errorf(`ParseRepository("none") = %+v, %v`, r, problems)
	}
	for raw, key := range map[string]string{
		`"open"`:                     "sandbox.network",
		`{"askTimeout": "5s"}`:       "sandbox.network.askTimeout",
		`{"deny": ["a..b"]}`:         "sandbox.network.deny",
		`{"preset": "wide"}`:         "sandbox.network.preset",
		`{"allow": ["x\u0000.org"]}`: "sandbox.network.allow",
	} {
		if _, problems := ParseRepository(json.RawMessage(raw)); len(problems) != 1 || problems[0].Key != key {
			t.Errorf("ParseRepository(%s) problems = %+v, want one for %s", raw, problems, key)
		}
	}
}

// TestWidening: what a repository asks beyond the user's policy, and only
// that, needs approval; the digest changes with it.
func TestWidening(t *testing.T) {
	for _, tc := range []struct {
		name    string
		user    Config
		repo    Repository
		empty   bool
		content string
		summary string
	}{
		{name: "a deny narrows", repo: Repository{Deny: rules("x.org")}, empty: true},
		{name: "a stricter preset narrows", repo: Repository{Preset: PresetLocked}, empty: true},
		{name: "the same preset", user: Config{Preset: PresetOpen}, repo: Repository{Preset: PresetOpen}, empty: true},
		{name: "none narrows", repo: Repository{None: true}, empty: true},
		{name: "a wider preset", repo: Repository{Preset: PresetOpen},
			content: "preset open (yours is dev)\n", summary: "let its sandbox reach any destination not denied (preset open, wider than your dev)"},
		{name: "dev over locked", user: Config{Preset: PresetLocked}, repo: Repository{Preset: PresetDev},
			content: "preset dev (yours is locked)\n"},
		{name: "allow and ask rules", repo: Repository{Allow: rules("api.example.com:443", "bücher.de"), Ask: rules("10.0.0.0/8"), Deny: rules("x.org")},
			content: "allow api.example.com:443\nallow xn--bcher-kva.de (written \"bücher.de\")\nask 10.0.0.0/8\n",
			summary: "let its sandbox connect without asking to api.example.com:443, xn--bcher-kva.de; and ask you about 10.0.0.0/8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.repo.Widens(tc.user)
			if w.Empty() != tc.empty {
				t.Fatalf("Empty = %v, want %v (%+v)", w.Empty(), tc.empty, w)
			}
			if w.Content() != tc.content {
				t.Errorf("content = %q, want %q", w.Content(), tc.content)
			}
			if tc.summary != "" && w.Summary() != tc.summary {
				t.Errorf("summary = %q, want %q", w.Summary(), tc.summary)
			}
		})
	}
	a := Repository{Allow: rules("api.example.com")}.Widens(Config{})
	b := Repository{Allow: rules("api.example.com:443")}.Widens(Config{})
	c := Repository{Allow: rules("API.example.com"), Deny: rules("x.org")}.Widens(Config{})
	if a.Digest() == b.Digest() || a.Digest() != c.Digest() {
		t.Errorf("digests: %s %s %s: a changed rule must change it, a deny or a spelling must not", a.Digest(), b.Digest(), c.Digest())
	}
}

func TestAssembleSources(t *testing.T) {
	p := Assemble(Config{Preset: PresetOpen, Allow: rules("a.org"), AskTimeout: 0},
		Repository{Preset: PresetLocked, Deny: rules("b.org"), Allow: rules("c.org")}, false,
		[]Kept{{Rule: mustRule("d.org:443"), Allow: true, Session: true}, {Rule: mustRule("e.org"), DecidedAt: time.UnixMilli(5)}})
	if p.Preset.Name != PresetLocked || p.PresetSource != SourceRepository || p.AskTimeout != DefaultAskTimeout {
		t.Errorf("preset %s from %s, timeout %s", p.Preset.Name, p.PresetSource, p.AskTimeout)
	}
	got := func(entries []Entry) string {
		var s []string
		for _, e := range entries {
			s = append(s, e.Rule.String()+"<"+e.Source)
		}
		return strings.Join(s, " ")
	}
	if g := got(p.Entries(Deny)); g != "b.org<repository e.org<kept" {
		t.Errorf("deny = %s", g)
	}
	if g := got(p.Entries(Allow)); g != "a.org<config d.org:443<session" {
		t.Errorf("allow = %s (the repository's allow is not approved)", g)
	}
	if p := Assemble(Config{}, Repository{}, false, nil); p.Preset.Name != DefaultPreset || p.PresetSource != SourceDefault {
		t.Errorf("default preset %s from %s", p.Preset.Name, p.PresetSource)
	}
}
