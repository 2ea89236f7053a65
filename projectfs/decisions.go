package projectfs

import (
	"fmt"
	"path/filepath"
)

// Decisions are the user's kept answers to permission questions (an
// "allow always", a "deny" with always), per project, under the user's
// own state directory: never in the repository, where a stranger could
// write answers in the user's name. One file per project (projectList).
type Decisions struct {
	list projectList[Decision]
}

// Decision is one kept answer: of which kind of question ("network",
// "expose", "limits"), for which rule (what was asked, e.g.
// "example.org:443"), allow or deny, and the user's reason.
type Decision struct {
	Kind      string `json:"kind"`
	Rule      string `json:"rule"`
	Allow     bool   `json:"allow"`
	Reason    string `json:"reason,omitempty"`
	DecidedAt int64  `json:"decidedAt"`
}

// MaxDecisions bounds the decisions kept for one project: they are read
// at every connection the sandbox makes.
const MaxDecisions = 1000

// ErrTooManyDecisions: a project already keeps MaxDecisions.
var ErrTooManyDecisions = fmt.Errorf("at most %d decisions are kept per project: forget some first", MaxDecisions)

// NewDecisions returns the decisions kept under stateDir; without a state
// directory none are kept.
func NewDecisions(stateDir string) Decisions {
	d := Decisions{list: projectList[Decision]{field: "decisions"}}
	if stateDir != "" {
		d.list.dir = filepath.Join(stateDir, "decisions")
	}
	return d
}

// Read returns the project's kept decisions, oldest first.
func (d Decisions) Read(project string) ([]Decision, error) { return d.list.read(project) }

// Change applies fn to the project's decisions under the file's lock and
// writes them atomically; more than MaxDecisions is ErrTooManyDecisions
// and changes nothing.
func (d Decisions) Change(project string, fn func([]Decision) ([]Decision, error)) error {
	return d.list.change(project, func(list []Decision) ([]Decision, error) {
		list, err := fn(list)
		if err == nil && len(list) > MaxDecisions {
			return nil, ErrTooManyDecisions
		}
		return list, err
	})
}

// Stamp changes when the project's file changes, by this process or
// another of the user's.
func (d Decisions) Stamp(project string) Stamp { return d.list.stamp(project) }

// Kept says whether decisions can be kept (there is a state directory).
func (d Decisions) Kept() bool { return d.list.dir != "" }
