package netpolicy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Config is the user's network policy, config.json's "network"
// (docs/protocol.md, "Network policy"):
//
//	{"network": {"preset": "dev", "allow": ["example.org", "*.example.com:443"],
//	             "deny": ["tracker.example.net"], "ask": ["192.168.0.0/16"],
//	             "askTimeout": "60s"}}
//
// or "network": "none" (no sandbox has a network). Every key is optional.
type Config struct {
	// None gives every sandbox no network at all.
	None bool
	// Preset names the preset; "" is DefaultPreset.
	Preset           string
	Allow, Deny, Ask []Rule
	// AskTimeout is how long a question waits for an answer; 0 is
	// DefaultAskTimeout.
	AskTimeout time.Duration
}

// Bounds of a policy as written.
const (
	DefaultAskTimeout = 60 * time.Second
	minAskTimeout     = time.Second
	maxAskTimeout     = 10 * time.Minute
	// MaxRules bounds each list: a policy is read at every connection.
	MaxRules = 500
)

// Problem is one key of the policy that cannot be used, named the way the
// file writes it ("network.allow"); Reason starts with what is wrong.
type Problem struct {
	Key    string
	Reason string
}

var configKeys = []string{"preset", "allow", "deny", "ask", "askTimeout"}

// ParseConfig reads config.json's "network" value. A value with problems
// gives no Config: a network policy is all or nothing, since a default in
// place of a key the user got wrong could allow what the user meant to
// deny.
func ParseConfig(raw json.RawMessage) (Config, []Problem) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "none":
			return Config{None: true}, nil
		case "default":
			return Config{}, nil
		}
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil || doc == nil {
		return Config{}, []Problem{{Key: "network", Reason: fmt.Sprintf(
			`must be an object such as {"preset": "dev", "allow": ["example.org"]}, or "none"; it is %s`, clip(string(raw)))}}
	}
	var c Config
	var problems []Problem
	fail := func(key, format string, args ...any) {
		problems = append(problems, Problem{Key: "network." + key, Reason: fmt.Sprintf(format, args...)})
	}
	for _, key := range sortedKeys(doc) {
		v := doc[key]
		switch key {
		case "preset":
			c.Preset = parsePreset(v, func(r string) { fail(key, "%s", r) })
		case "allow":
			c.Allow = parseRules(v, func(r string) { fail(key, "%s", r) })
		case "deny":
			c.Deny = parseRules(v, func(r string) { fail(key, "%s", r) })
		case "ask":
			c.Ask = parseRules(v, func(r string) { fail(key, "%s", r) })
		case "askTimeout":
			c.AskTimeout = parseAskTimeout(v, func(r string) { fail(key, "%s", r) })
		default:
			fail(clip(key), "is not a known key (known: %s)", strings.Join(configKeys, ", "))
		}
	}
	if problems != nil {
		return Config{}, problems
	}
	return c, nil
}

// parsePreset reads a preset's name.
func parsePreset(raw json.RawMessage, fail func(string)) string {
	var name string
	if json.Unmarshal(raw, &name) != nil || presetNamed(name) == nil {
		fail(fmt.Sprintf("must be %s; it is %s", quoteAll(PresetNames()), clip(string(raw))))
		return ""
	}
	return name
}

// parseRules reads a list of rules, naming each entry that is wrong.
func parseRules(raw json.RawMessage, fail func(string)) []Rule {
	var texts []string
	if json.Unmarshal(raw, &texts) != nil {
		fail(fmt.Sprintf(`must be a list of strings such as ["example.org", "*.example.com:443", "10.0.0.0/8"]; it is %s`, clip(string(raw))))
		return nil
	}
	if len(texts) > MaxRules {
		fail(fmt.Sprintf("has %d rules; at most %d are read", len(texts), MaxRules))
		return nil
	}
	rules := make([]Rule, 0, len(texts))
	for i, text := range texts {
		r, err := ParseRule(text)
		if err != nil {
			fail(fmt.Sprintf("entry %d: %v", i+1, err))
			continue
		}
		rules = append(rules, r)
	}
	return rules
}

func parseAskTimeout(raw json.RawMessage, fail func(string)) time.Duration {
	var s string
	_ = json.Unmarshal(raw, &s) // a value that is not a string leaves "", which is no duration
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < minAskTimeout || d > maxAskTimeout {
		fail(fmt.Sprintf(`must be a duration from %s to %s such as "60s"; it is %s`, minAskTimeout, maxAskTimeout, clip(string(raw))))
		return 0
	}
	return d
}

func sortedKeys(doc map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
