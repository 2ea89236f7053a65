package workspace

import (
	"context"
	"errors"
	"fmt"
)

// Synced is what a sync did.
type Synced struct {
	// Files and Bytes count the project's files as the workspace now
	// holds them (links count as files of no bytes).
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Changed says the sync made a new base.
	Changed bool   `json:"changed"`
	Base    string `json:"base"`
	// Sent and SentBytes count what crossed; Removed the files removed.
	Sent      int   `json:"sent"`
	SentBytes int64 `json:"sentBytes"`
	Removed   int   `json:"removed"`
	// Saved names the ref that now keeps changes found in the working
	// tree that no task saved, before the sync put the base back.
	Saved string `json:"saved,omitempty"`
}

// Sync makes the sandbox's /workspace hold the project's files as they are
// now, and commits them as its base if anything changed. Progress (may be
// nil) hears how far the stream got. A sandbox whose workspace is not what
// the manifest says (a sync that failed, or a lost manifest) gets every
// file again.
func (w *Workspace) Sync(ctx context.Context, report func(Progress)) (Synced, error) {
	container := w.sandbox.ContainerID()
	old := loadManifest(w.opts.StateDir, container)
	res, next, err := w.syncFrom(ctx, old, report)
	if errors.Is(err, errStale) {
		res, next, err = w.syncFrom(ctx, &manifest{files: map[string]entry{}}, report)
	}
	if err != nil {
		return Synced{}, fmt.Errorf("sync the project into the sandbox: %w", err)
	}
	if err := saveManifest(w.opts.StateDir, container, next); err != nil {
		return Synced{}, fmt.Errorf("keep the workspace's manifest: %w", err)
	}
	return res, nil
}

func (w *Workspace) syncFrom(ctx context.Context, old *manifest, report func(Progress)) (Synced, *manifest, error) {
	p, err := w.makePlan(ctx, old)
	if err != nil {
		return Synced{}, nil, fmt.Errorf("list the project: %w", err)
	}
	ans, err := w.send(ctx, p, report)
	if err != nil {
		return Synced{}, nil, err
	}
	if !isObjectID(ans.Base) {
		return Synced{}, nil, fmt.Errorf("the workspace answered a base that is not a commit id: %q", ans.Base)
	}
	return Synced{
		Files: p.files, Bytes: p.bytes, Changed: ans.Changed, Base: ans.Base,
		Sent: len(p.send), SentBytes: p.sendBytes, Removed: len(p.remove), Saved: ans.Saved,
	}, &manifest{base: ans.Base, files: p.next}, nil
}

// Base is the base of the last sync into this sandbox, or ErrNotSynced.
func (w *Workspace) Base() (string, error) {
	base := loadBase(w.opts.StateDir, w.sandbox.ContainerID())
	if !isObjectID(base) {
		return "", ErrNotSynced
	}
	return base, nil
}

// isObjectID says s is a full hexadecimal git object id (SHA-1).
func isObjectID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
