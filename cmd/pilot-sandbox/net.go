package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	units "github.com/docker/go-units"

	"github.com/pilot-sandbox/pilot-sandbox/netpolicy"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

const netUsage = `usage: pilot-sandbox net [--project DIR] [--json] [-n N]   the policy in force and the last N connections
       pilot-sandbox net allow HOST | deny HOST        add a rule to your config.json (every project)
       pilot-sandbox net preset open|dev|locked        choose your preset
       pilot-sandbox net forget RULE [--project DIR]   forget a decision kept for the project`

// runNet shows the network policy in force and the log, and changes the
// user's own policy (config.json's network) or kept decisions.
func runNet(ctx context.Context, e *env, args []string) error {
	var n int
	c, fs, err := newCLI(e, "net", flagsFirst(args), func(fs *flag.FlagSet) {
		fs.IntVar(&n, "n", 20, "how many of the last connections to show")
	})
	if err != nil {
		return err
	}
	defer c.close()
	words := fs.Args()
	if len(words) == 0 {
		return c.showNetwork(n)
	}
	if len(words) != 2 {
		fmt.Fprintln(e.stderr, netUsage)
		return errUsage
	}
	switch words[0] {
	case "allow", "deny":
		return c.netRule(words[0], words[1])
	case "preset":
		return c.netPreset(words[1])
	case "forget":
		return c.netForget(words[1])
	}
	fmt.Fprintf(e.stderr, "pilot-sandbox net: unknown %q\n%s\n", words[0], netUsage)
	return errUsage
}

// flagsFirst moves net's flags before its words, so that "net forget RULE
// --project DIR" reads as it is meant (flags end at the first word).
func flagsFirst(args []string) []string {
	var flags, words []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			words = append(words, args[i+1:]...)
			i = len(args)
		case !strings.HasPrefix(a, "-"):
			words = append(words, a)
		case strings.Contains(a, "=") || !slices.Contains([]string{"-project", "--project", "-n", "--n"}, a):
			flags = append(flags, a)
		case i+1 < len(args):
			flags, i = append(flags, a, args[i+1]), i+1
		default:
			flags = append(flags, a)
		}
	}
	return append(append(flags, "--"), words...)
}

// netRule adds a rule to config.json's allow (or deny) and takes it out
// of the other list, so the command does what it says.
func (c *cli) netRule(list, text string) error {
	rule, err := netpolicy.ParseRule(text)
	if err != nil {
		return err
	}
	other := map[string]string{"allow": "deny", "deny": "allow"}[list]
	err = projectfs.EditUserNetwork(policyConfig().File, func(m map[string]json.RawMessage) (map[string]json.RawMessage, error) {
		add, err := withRule(m[list], rule, true)
		if err != nil {
			return nil, fmt.Errorf("config.json's network.%s: %w", list, err)
		}
		drop, err := withRule(m[other], rule, false)
		if err != nil {
			return nil, fmt.Errorf("config.json's network.%s: %w", other, err)
		}
		set := map[string]json.RawMessage{list: add}
		if m[other] != nil {
			set[other] = drop
		}
		return set, nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.env.stdout, "%s %s for every project (network.%s in %s)\n", verbPast(list), rule, list, policyConfig().File)
	if w := rule.Written(); w != "" {
		fmt.Fprintf(c.env.stdout, "  (%q is written %s: a name in Unicode is kept as its A-labels)\n", w, rule)
	}
	return nil
}

func verbPast(list string) string {
	if list == "allow" {
		return "Allowed"
	}
	return "Denied"
}

// withRule is a list of rules as written, with rule added (or removed):
// entries are compared in their one written form, and the others kept as
// they are.
func withRule(raw json.RawMessage, rule netpolicy.Rule, add bool) (json.RawMessage, error) {
	var texts []string
	if raw != nil {
		if err := json.Unmarshal(raw, &texts); err != nil {
			return nil, errors.New("is not a list of strings: fix it first")
		}
	}
	same := func(t string) bool {
		r, err := netpolicy.ParseRule(t)
		return err == nil && r.String() == rule.String()
	}
	has := slices.ContainsFunc(texts, same)
	switch {
	case add && !has:
		texts = append(texts, rule.String())
	case !add:
		texts = slices.DeleteFunc(texts, same)
	}
	if texts == nil {
		texts = []string{}
	}
	return json.Marshal(texts)
}

func (c *cli) netPreset(name string) error {
	if !slices.Contains(netpolicy.PresetNames(), name) {
		return fmt.Errorf("preset %q: choose %s", name, strings.Join(netpolicy.PresetNames(), ", "))
	}
	err := projectfs.EditUserNetwork(policyConfig().File, func(map[string]json.RawMessage) (map[string]json.RawMessage, error) {
		value, _ := json.Marshal(name)
		return map[string]json.RawMessage{"preset": value}, nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.env.stdout, "The preset is %s for every project (network.preset in %s)\n", name, policyConfig().File)
	return nil
}

func (c *cli) netForget(text string) error {
	project, err := projectfs.Canonical(c.project)
	if err != nil {
		return err
	}
	n, err := c.net.Forget(project, text)
	if err != nil {
		return err
	}
	if r, err := netpolicy.ParseRule(text); err == nil {
		text = r.String()
	}
	fmt.Fprintf(c.env.stdout, "Forgot %d decision(s) on %s for %s: it is asked again\n", n, text, project)
	return nil
}

// showNetwork prints the policy in force for the project, the decisions
// kept for it and its last n connections.
func (c *cli) showNetwork(n int) error {
	project, err := projectfs.Canonical(c.project)
	if err != nil {
		return err
	}
	view, err := c.net.Policy(project)
	if err != nil {
		return fmt.Errorf("the network policy cannot be used, so no sandbox with a network starts: %w", err)
	}
	entries, err := c.net.Log(project, n)
	if err != nil {
		return err
	}
	if entries == nil {
		entries = []projectfs.NetLogEntry{}
	}
	if c.json {
		c.printJSON(map[string]any{"policy": view, "log": entries})
		return nil
	}
	printPolicy(c.env.stdout, project, view)
	printLog(c.env.stdout, entries)
	return nil
}

func printPolicy(w io.Writer, project string, v netpolicy.View) {
	fmt.Fprintf(w, "Network policy for %s\n", project)
	if v.None {
		fmt.Fprintln(w, "  no network at all (network \"none\")")
		return
	}
	fmt.Fprintf(w, "  preset %s (%s): everything no rule names: %s; unanswered questions are denied after %s\n",
		v.Preset.Name, v.Preset.Source, v.Preset.Otherwise, time.Duration(v.AskTimeout)*time.Millisecond)
	for _, r := range v.Rules {
		source := r.Source
		if r.DecidedAt != 0 {
			source += " " + time.UnixMilli(r.DecidedAt).Format("2006-01-02 15:04")
		}
		fmt.Fprintf(w, "  %-5s  %-40s %s\n", r.List, r.Rule, source)
	}
	if rp := v.Repository; rp != nil {
		state := "not approved: pilot-sandbox approve"
		if rp.Approved {
			state = "approved"
		}
		fmt.Fprintf(w, "  the project asks beyond your policy (%s):\n    %s\n", state, strings.ReplaceAll(strings.TrimSpace(rp.Asks), "\n", "\n    "))
	}
	fmt.Fprintln(w, "  never: link-local and cloud metadata addresses, the host's own addresses, port 25 (SMTP);")
	fmt.Fprintln(w, "  private ranges (10/8, 172.16/12, 192.168/16, 100.64/10, loopback, fc00::/7) only by an allow or ask of their IP or CIDR")
}

func printLog(w io.Writer, entries []projectfs.NetLogEntry) {
	if len(entries) == 0 {
		fmt.Fprintln(w, "No connections logged.")
		return
	}
	fmt.Fprintf(w, "Last %d connections:\n", len(entries))
	for _, e := range entries {
		fmt.Fprintf(w, "  %s  %-5s %-40s by %-7s %s in, %s out\n", time.UnixMilli(e.Time).Format("01-02 15:04:05"), e.Decision,
			fmt.Sprintf("%s:%d", e.Host, e.Port), e.By, units.HumanSize(float64(e.BytesIn)), units.HumanSize(float64(e.BytesOut)))
	}
}
