package activity

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
)

// Follow tells the listeners every change of a holder, this process's, at
// once, and another's, or a lease that ran out, within PollInterval, until
// ctx ends. Each file names its project.
func (c *Control) Follow(ctx context.Context) { c.follow(ctx, c.noted()) }

// noted is the holders now, by file name: what Follow tells changes of.
func (c *Control) noted() map[string]ControlState {
	known := map[string]ControlState{}
	c.scan(known, false)
	return known
}

func (c *Control) follow(ctx context.Context, known map[string]ControlState) {
	poll(ctx, c.kick, func() { c.scan(known, true) })
}

// scan reads the control files and tells what changed; a removed file is
// the agent's control without an ask.
func (c *Control) scan(known map[string]ControlState, tell bool) {
	names, _ := filepath.Glob(filepath.Join(c.dir, "*.json"))
	seen := map[string]bool{}
	for _, path := range names {
		name := filepath.Base(path)
		seen[name] = true
		project, ok := c.project(path)
		if !ok {
			continue
		}
		st := c.State(project)
		if old, had := known[name]; (!had && st.Holder == HolderAgent && st.Reason == "") || old == st {
			known[name] = st
			continue
		}
		known[name] = st
		if tell {
			c.tell(st)
		}
	}
	for name, old := range known {
		if !seen[name] {
			delete(known, name)
			if tell && (old.Holder != HolderAgent || old.Reason != "") {
				c.tell(ControlState{ProjectPath: old.ProjectPath, Holder: HolderAgent})
			}
		}
	}
}

// project is the project a control file is for, written in it.
func (c *Control) project(path string) (string, bool) {
	var f controlFile
	data, err := os.ReadFile(path)
	if err != nil || len(data) > 4<<10 || json.Unmarshal(data, &f) != nil || f.Project == "" {
		return "", false
	}
	return f.Project, true
}

func (c *Control) tell(st ControlState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, fn := range c.listeners {
		fn(st)
	}
}
