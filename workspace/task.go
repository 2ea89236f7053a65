package workspace

import (
	"context"
	"fmt"
)

// SaveTask commits the working tree as task id left it on
// refs/pilot/tasks/ID, its parent base, and returns the commit: diff and
// apply read it, whatever happens to the working tree later.
func (w *Workspace) SaveTask(ctx context.Context, id, base string) (string, error) {
	if err := checkIDs(base); err != nil {
		return "", err
	}
	var ans struct {
		Commit string `json:"commit"`
	}
	if err := w.call(ctx, &ans, "save", id, base); err != nil {
		return "", fmt.Errorf("save the task's change: %w", err)
	}
	if !isObjectID(ans.Commit) {
		return "", fmt.Errorf("save the task's change: the workspace answered %q, not a commit id", ans.Commit)
	}
	return ans.Commit, nil
}

// Discard drops task id's commit and puts the working tree back to the
// last sync's base (files the project's .gitignore ignores stay).
func (w *Workspace) Discard(ctx context.Context, id string) error {
	base, err := w.Base()
	if err != nil {
		return err
	}
	var ans struct{}
	if err := w.call(ctx, &ans, "discard", id, base); err != nil {
		return fmt.Errorf("discard the task's change: %w", err)
	}
	return nil
}
