package activity

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Who holds a sandbox's desktop (docs/activity.md, Control).
const (
	HolderAgent = "agent"
	HolderUser  = "user"
)

// Lease is how long the user's control outlives the last sign of its
// holder: the sidecar whose client took it renews it every Lease/3 while
// the client is connected, so a panel that disappears, or a sidecar that
// dies, gives control back to the agent within Lease.
const Lease = 30 * time.Second

// maxReason bounds a handOver's reason.
const maxReason = 500

// ControlState is who holds a project's desktop; Reason is what the agent
// asked the user to do (sandbox_wait handOver), until the user gives
// control back.
type ControlState struct {
	ProjectPath string `json:"projectPath"`
	Holder      string `json:"holder"`
	Reason      string `json:"reason,omitempty"`
}

// controlFile is a project's file: the user's hold ends at Until (Unix
// ms); a file without one is the agent's ask.
type controlFile struct {
	Project string `json:"projectPath"`
	Holder  string `json:"holder"`
	Reason  string `json:"reason,omitempty"`
	Until   int64  `json:"until,omitempty"`
}

// Control is the holders of the projects' desktops, one small file per
// project under stateDir/control, shared by every process of the user. No
// file: the agent holds it.
type Control struct {
	dir   string
	lease time.Duration // Lease; shorter in tests
	kick  chan struct{} // a change by this process: tell now

	mu        sync.Mutex // guards listeners and next
	listeners map[int]func(ControlState)
	next      int
}

// NewControl returns the holders under stateDir.
func NewControl(stateDir string) *Control {
	return &Control{dir: filepath.Join(stateDir, "control"), lease: Lease, kick: make(chan struct{}, 1), listeners: map[int]func(ControlState){}}
}

func (c *Control) path(project string) string { return filepath.Join(c.dir, key(project)+".json") }

// State is who holds the project's desktop now.
func (c *Control) State(project string) ControlState {
	st := ControlState{ProjectPath: project, Holder: HolderAgent}
	f, ok := c.read(project)
	if !ok {
		return st
	}
	st.Reason = f.Reason
	if f.Holder == HolderUser && f.Until > time.Now().UnixMilli() {
		st.Holder = HolderUser
	}
	return st
}

func (c *Control) read(project string) (controlFile, bool) {
	var f controlFile
	data, err := os.ReadFile(c.path(project))
	if err != nil || len(data) > 4<<10 || json.Unmarshal(data, &f) != nil {
		return f, false
	}
	return f, true
}

// UserHolds says whether the user holds the project's desktop.
func (c *Control) UserHolds(project string) bool { return c.State(project).Holder == HolderUser }

// Take gives the user the project's desktop for a Lease; Renew extends it.
func (c *Control) Take(project string) error {
	f, _ := c.read(project)
	return c.write(project, controlFile{Holder: HolderUser, Reason: f.Reason, Until: time.Now().Add(c.lease).UnixMilli()})
}

// Renew extends the user's hold, if the user still holds it.
func (c *Control) Renew(project string) error {
	if !c.UserHolds(project) {
		return nil
	}
	return c.Take(project)
}

// Release gives the desktop back to the agent, and ends its ask.
func (c *Control) Release(project string) error {
	err := os.Remove(c.path(project))
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	c.poke()
	return err
}

// Ask records the agent's ask that the user take over, with its reason,
// unless the user holds the desktop already.
func (c *Control) Ask(project, reason string) error {
	f, _ := c.read(project)
	f.Reason = Cut(reason, maxReason)
	if c.State(project).Holder != HolderUser {
		f = controlFile{Holder: HolderAgent, Reason: f.Reason}
	}
	return c.write(project, f)
}

// write replaces the project's file whole (a rename), so a reader never
// sees half of one.
func (c *Control) write(project string, f controlFile) error {
	f.Project = project
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	data, _ := json.Marshal(f)
	tmp, err := os.CreateTemp(c.dir, ".control-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), c.path(project)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	c.poke()
	return nil
}

func (c *Control) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Listen calls fn with each change of a project's holder or reason until
// stop. fn must not block.
func (c *Control) Listen(fn func(ControlState)) (stop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.next
	c.next++
	c.listeners[id] = fn
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.listeners, id)
	}
}
