package service

import (
	"context"
	"fmt"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/sandboxfs"
)

// StageCopy is the progress stage of an upload or a download.
const StageCopy = "copy"

// fileExecTimeout bounds the commands the files run in a running sandbox
// (rm -r of a large tree, find).
const fileExecTimeout = 5 * time.Minute

// Files returns the files of the project's sandbox, running or stopped
// (PROTOCOL.md, Files): a file call is a use of the sandbox, and an
// upload's or download's progress is the project's sandbox/progress.
func (m *Manager) Files(ctx context.Context, path string) (*sandboxfs.FS, error) {
	st, err := m.Status(ctx, path)
	switch {
	case err != nil:
		return nil, err
	case st == nil:
		return nil, ErrNoSandbox
	case st.ContainerID == "":
		return nil, fmt.Errorf("%w (it is %s and has no container yet)", ErrNotRunning, st.Status)
	}
	project := st.ProjectPath
	m.Touch(project)
	return sandboxfs.New(m.docker, st.ContainerID, sandboxfs.Options{
		Running: st.Status == StatusRunning,
		Exec: func(ctx context.Context, argv []string, maxOutput int) (sandboxfs.ExecResult, error) {
			res, err := m.ExecArgv(ctx, project, ExecSpec{Cmd: argv, MaxOutput: maxOutput, Timeout: fileExecTimeout})
			return sandboxfs.ExecResult{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr, Truncated: res.Truncated}, err
		},
		Progress: func(done sandboxfs.Copied, total int64) {
			m.progress(project, StageCopy, copyMessage(done, total), int(done.Bytes), int(total))
		},
	}), nil
}

func copyMessage(done sandboxfs.Copied, total int64) string {
	if total > 0 {
		return fmt.Sprintf("Copied %d files, %.1f of %.1f MB", done.Files, float64(done.Bytes)/1e6, float64(total)/1e6)
	}
	return fmt.Sprintf("Copied %d files, %.1f MB", done.Files, float64(done.Bytes)/1e6)
}
