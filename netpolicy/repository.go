package netpolicy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Repository is a repository's own network policy, .pilot/settings.json's
// "sandbox.network": "none", or an object with any of preset, deny, allow
// and ask. It comes with the repository, which may be a stranger's, so it
// may only narrow the user's policy (a deny, a stricter preset) on its
// own; whatever it asks beyond that (a wider preset, any allow or ask
// rule) is applied only once the user approved exactly that (Widening).
type Repository struct {
	None             bool
	Preset           string
	Allow, Deny, Ask []Rule
}

var repositoryKeys = []string{"preset", "deny", "allow", "ask"}

// ParseRepository reads sandbox.network. Keys are named as the settings
// file writes them ("sandbox.network.deny").
func ParseRepository(raw json.RawMessage) (Repository, []Problem) {
	var s string
	if json.Unmarshal(raw, &s) == nil && s == "none" {
		return Repository{None: true}, nil
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil || doc == nil {
		return Repository{}, []Problem{{Key: "sandbox.network", Reason: fmt.Sprintf(
			`must be "none" (no network), or an object such as {"preset": "locked", "deny": ["example.org"]}; it is %s`, clip(string(raw)))}}
	}
	var r Repository
	var problems []Problem
	fail := func(key string) func(string) {
		return func(reason string) {
			problems = append(problems, Problem{Key: "sandbox.network." + key, Reason: reason})
		}
	}
	for _, key := range sortedKeys(doc) {
		v := doc[key]
		switch key {
		case "preset":
			r.Preset = parsePreset(v, fail(key))
		case "deny":
			r.Deny = parseRules(v, fail(key))
		case "allow":
			r.Allow = parseRules(v, fail(key))
		case "ask":
			r.Ask = parseRules(v, fail(key))
		default:
			fail(clip(key))("is not a known key (known: " + strings.Join(repositoryKeys, ", ") + ")")
		}
	}
	if problems != nil {
		return Repository{}, problems
	}
	return r, nil
}

// Widening is what a repository's policy asks beyond the user's own: a
// preset wider than the user's, and every allow and ask rule (each may
// open a destination the user's policy would ask about or deny).
type Widening struct {
	// Preset is the repository's preset when it is wider than the
	// user's, else "".
	Preset string
	// UserPreset is the user's preset it is wider than.
	UserPreset string
	Allow, Ask []Rule
}

// Widens is what the repository asks beyond the user's policy.
func (r Repository) Widens(user Config) Widening {
	w := Widening{UserPreset: user.preset().Name, Allow: r.Allow, Ask: r.Ask}
	if p := presetNamed(r.Preset); p != nil && user.preset().stricter(p) {
		w.Preset = p.Name
	}
	return w
}

// Empty says whether the repository asks nothing beyond the user's policy.
func (w Widening) Empty() bool { return w.Preset == "" && len(w.Allow) == 0 && len(w.Ask) == 0 }

// Content is the widening as the approval shows it: one line per part,
// each rule in its written form.
func (w Widening) Content() string {
	var b strings.Builder
	if w.Preset != "" {
		fmt.Fprintf(&b, "preset %s (yours is %s)\n", w.Preset, w.UserPreset)
	}
	for _, r := range w.Allow {
		b.WriteString("allow " + ruleText(r) + "\n")
	}
	for _, r := range w.Ask {
		b.WriteString("ask " + ruleText(r) + "\n")
	}
	return b.String()
}

// ruleText is a rule with what the user wrote beside it when it differs.
func ruleText(r Rule) string {
	if r.written != "" {
		return fmt.Sprintf("%s (written %q)", r, r.written)
	}
	return r.String()
}

// Summary says in plain words what approving the widening does.
func (w Widening) Summary() string {
	var parts []string
	switch w.Preset {
	case PresetOpen:
		parts = append(parts, fmt.Sprintf("reach any destination not denied (preset open, wider than your %s)", w.UserPreset))
	case PresetDev:
		parts = append(parts, "reach the package registries and git hosts and ask about the rest (preset dev, wider than your locked)")
	}
	if n := len(w.Allow); n > 0 {
		parts = append(parts, fmt.Sprintf("connect without asking to %s", listRules(w.Allow)))
	}
	if n := len(w.Ask); n > 0 {
		parts = append(parts, fmt.Sprintf("ask you about %s", listRules(w.Ask)))
	}
	return "let its sandbox " + strings.Join(parts, "; and ")
}

// listRules names up to three rules and counts the rest.
func listRules(rules []Rule) string {
	const most = 3
	names := make([]string, 0, most)
	for _, r := range rules[:min(len(rules), most)] {
		names = append(names, r.String())
	}
	s := strings.Join(names, ", ")
	if len(rules) > most {
		s += fmt.Sprintf(" and %d more", len(rules)-most)
	}
	return s
}

// Digest names exactly this widening: its approval covers it and nothing
// else.
func (w Widening) Digest() string {
	var b strings.Builder
	b.WriteString("network\x00preset=" + w.Preset + "\x00")
	for _, r := range w.Allow {
		b.WriteString("allow=" + r.String() + "\x00")
	}
	for _, r := range w.Ask {
		b.WriteString("ask=" + r.String() + "\x00")
	}
	sum := sha256.Sum256([]byte(b.String()))
	return "sha256:" + hex.EncodeToString(sum[:])
}
