package netpolicy

// View is the policy in force as sandbox/network/policy shows it: every
// part in the order of judgement, each with where it came from.
type View struct {
	// None: the sandbox has no network at all; nothing else applies.
	None bool `json:"none"`
	// Order names the steps of judgement, first to last.
	Order      []string   `json:"order"`
	Fixed      FixedView  `json:"fixed"`
	Rules      []RuleView `json:"rules"`
	Preset     PresetView `json:"preset"`
	Private    []Span     `json:"private"`
	AskTimeout int64      `json:"askTimeout"` // milliseconds
	// Repository is what the project's settings ask beyond the user's
	// policy, when they ask anything: applied only once approved.
	Repository *RepositoryView `json:"repository,omitempty"`
}

// FixedView are the fixed denials.
type FixedView struct {
	Ranges []Span `json:"ranges"`
	Ports  []int  `json:"ports"`
	// Host says what else is fixed per sandbox.
	Host string `json:"host"`
}

// RuleView is one rule in force.
type RuleView struct {
	List      string `json:"list"` // "deny", "allow" or "ask"
	Rule      string `json:"rule"`
	Source    string `json:"source"` // SourceConfig, SourceRepository, SourceKept, SourceSession
	Written   string `json:"written,omitempty"`
	Reason    string `json:"reason,omitempty"`
	DecidedAt int64  `json:"decidedAt,omitempty"`
}

// PresetView is the preset in force.
type PresetView struct {
	Name      string   `json:"name"`
	Source    string   `json:"source"` // SourceConfig, SourceRepository or SourceDefault
	Otherwise string   `json:"otherwise"`
	Allow     []string `json:"allow"`
}

// RepositoryView is the repository's widening and whether it applies.
type RepositoryView struct {
	Asks     string `json:"asks"`
	Approved bool   `json:"approved"`
	Digest   string `json:"digest"`
}

// View is the policy as shown.
func (p *Policy) View() View {
	v := View{
		None:       p.None,
		Order:      []string{"fixed", "deny", "allow", "ask", "preset"},
		Fixed:      FixedView{Ranges: fixedSpans, Ports: []int{smtpPort}, Host: "the sandbox network's gateway and the host's own addresses"},
		Rules:      []RuleView{},
		Private:    privateSpans,
		AskTimeout: p.AskTimeout.Milliseconds(),
		Preset: PresetView{Name: p.Preset.Name, Source: p.PresetSource, Otherwise: p.Preset.Otherwise.String(),
			Allow: make([]string, 0, len(p.Preset.Allow))},
	}
	for _, r := range p.Preset.Allow {
		v.Preset.Allow = append(v.Preset.Allow, r.String())
	}
	for _, o := range [...]Outcome{Deny, Allow, Ask} {
		for _, e := range p.Entries(o) {
			rv := RuleView{List: o.String(), Rule: e.Rule.String(), Source: e.Source, Written: e.Rule.Written()}
			if e.Kept != nil {
				rv.Reason = e.Kept.Reason
			}
			if e.Kept != nil && !e.Kept.DecidedAt.IsZero() {
				rv.DecidedAt = e.Kept.DecidedAt.UnixMilli()
			}
			v.Rules = append(v.Rules, rv)
		}
	}
	if w := p.Repository; !w.Empty() {
		v.Repository = &RepositoryView{Asks: w.Content(), Approved: p.Approved, Digest: w.Digest()}
	}
	return v
}
