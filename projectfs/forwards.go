package projectfs

import (
	"path/filepath"
)

// Forwards are the host ports each project's sandbox may reach
// (sandbox/ports/forward), kept under the user's own state directory: a
// project's files come with its repository, and a repository a stranger
// wrote must not be able to open the user's local database to the
// sandbox. One file per project (projectList).
type Forwards struct {
	list projectList[Forward]
}

// Forward is a host port reached from the sandbox: inside, localhost:Port
// is the host's 127.0.0.1:HostPort.
type Forward struct {
	Port     int `json:"port"`
	HostPort int `json:"hostPort"`
}

// NewForwards returns the forwards kept under stateDir; without a state
// directory none are kept, and a forward lasts while the process runs.
func NewForwards(stateDir string) Forwards {
	f := Forwards{list: projectList[Forward]{field: "forwards", order: func(a, b Forward) int { return a.Port - b.Port }}}
	if stateDir != "" {
		f.list.dir = filepath.Join(stateDir, "forwards")
	}
	return f
}

// Read returns the project's forwards, by port; none when nothing was
// kept. A file that is not a list of forwards for this project is an
// error (it is left as it is).
func (f Forwards) Read(project string) ([]Forward, error) { return f.list.read(project) }

// Change applies fn to the project's forwards as the file has them now and
// writes the result, under the file's lock, so that two processes of the
// user do not lose each other's changes. fn's error leaves the file alone.
// A corrupt file is moved aside (NAME.corrupt-TIME) and counts as empty.
func (f Forwards) Change(project string, fn func([]Forward) ([]Forward, error)) error {
	return f.list.change(project, fn)
}

// Dir is where the forwards are kept ("" for nowhere), for messages.
func (f Forwards) Dir() string { return f.list.dir }
