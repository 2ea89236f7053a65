package service

import (
	"errors"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// Warning tells a client about a problem it did not ask about but a person
// should know of: a file of the project's found corrupt and set aside at
// startup, or a state file that could not be saved while the sandbox runs
// on (PROTOCOL additions: sandbox/warning).
//
// A warning about the user's own config.json has no project, and one
// about a sandbox's disk use (ProblemDisk) no file.
type Warning struct {
	ProjectPath string                `json:"projectPath,omitempty"`
	File        string                `json:"file,omitempty"`
	Problem     projectfs.FileProblem `json:"problem"`
	KeptAs      string                `json:"keptAs,omitempty"`
	Message     string                `json:"message"`
}

// warn reports a file problem once: to the log, and as a warning event,
// unless the same problem with the file was reported last time. A nil
// error for a file says it is fine again, so a later problem is news.
func (m *Manager) warn(b *box, file string, err error) {
	var fe *projectfs.FileError
	if err != nil && !errors.As(err, &fe) {
		m.log.Warn().Err(err).Str("project", b.project).Str("file", file).Msg("project file")
		return
	}
	b.mu.Lock()
	if b.reported == nil {
		b.reported = map[string]string{}
	}
	msg := ""
	if fe != nil {
		msg = fe.Error()
	}
	repeated := b.reported[file] == msg
	b.reported[file] = msg
	b.mu.Unlock()
	if fe == nil || repeated {
		return
	}
	m.log.Warn().Str("project", b.project).Str("file", fe.Path).Str("problem", string(fe.Problem)).Str("keptAs", fe.KeptAs).Err(fe.Err).Msg(msg)
	m.events.publish(Event{Kind: EventWarning, Project: b.project, Warning: Warning{
		ProjectPath: b.project, File: fe.Path, Problem: fe.Problem, KeptAs: fe.KeptAs, Message: msg,
	}})
}
