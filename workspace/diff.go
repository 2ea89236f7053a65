package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
)

// Limits of a diff.
const (
	// MaxPatch bounds the unified diff a diff returns; the file list is
	// whole.
	MaxPatch = 8 << 20
	// maxDiffAnswer bounds the diff's whole JSON answer: the patch, JSON
	// escaped, and the list of files (about 100 bytes a file).
	maxDiffAnswer = 64 << 20
	// maxRaw bounds the raw list of a change apply reads (about 130 bytes
	// a file).
	maxRaw = 64 << 20
)

// Diff is a task's change: its commit against the base it started from.
type Diff struct {
	Base           string       `json:"base"`
	Files          []FileChange `json:"files"`
	Patch          string       `json:"patch"`
	PatchTruncated bool         `json:"patchTruncated"`
}

// FileChange is one file of a diff.
type FileChange struct {
	Path string `json:"path"`
	// Status is "added", "modified", "deleted" or "typechange" (a file
	// that became a link, or the reverse).
	Status    string `json:"status"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
	Binary    bool   `json:"binary"`
}

// Diff reads the change of commit against base in the sandbox.
func (w *Workspace) Diff(ctx context.Context, base, commit string) (Diff, error) {
	if err := checkIDs(base, commit); err != nil {
		return Diff{}, err
	}
	res, err := w.sandbox.Exec(ctx, Command{
		Argv:      w.command("diff", base, commit, strconv.Itoa(MaxPatch)),
		MaxOutput: maxDiffAnswer, Timeout: programTimeout,
	})
	if err != nil {
		return Diff{}, err
	}
	if err := programError("diff", res); err != nil {
		return Diff{}, err
	}
	d := Diff{Base: base}
	if err := json.Unmarshal(bytes.TrimSpace(res.Stdout), &d); err != nil {
		return Diff{}, fmt.Errorf("workspace diff: its answer is not JSON: %w", err)
	}
	d.Base = base
	if d.Files == nil {
		d.Files = []FileChange{}
	}
	return d, nil
}

// checkIDs checks commit ids before they go into an argv.
func checkIDs(ids ...string) error {
	for _, id := range ids {
		if !isObjectID(id) {
			return fmt.Errorf("%q is not a commit id", id)
		}
	}
	return nil
}

// change is one file of a change as git's raw diff says it: its modes
// (octal text; "000000" for none) and blob ids on each side.
type change struct {
	path             string
	oldMode, newMode string
	oldBlob, newBlob string
}

const (
	modeNone = "000000"
	modeFile = "100644"
	modeExec = "100755"
	modeLink = "120000"
)

func (c change) deleted() bool { return c.newMode == modeNone }
func (c change) added() bool   { return c.oldMode == modeNone }

// parseRaw reads `git diff --raw -z --no-renames --no-abbrev`: for each
// file ":OLDMODE NEWMODE OLDBLOB NEWBLOB STATUS\0PATH\0".
func parseRaw(raw []byte) ([]change, error) {
	fields := bytes.Split(raw, []byte{0})
	var out []change
	for i := 0; i+1 < len(fields); i += 2 {
		meta := bytes.Fields(bytes.TrimPrefix(fields[i], []byte(":")))
		if len(meta) != 5 || !bytes.HasPrefix(fields[i], []byte(":")) {
			return nil, fmt.Errorf("a raw diff line reads %q", fields[i])
		}
		c := change{path: string(fields[i+1]), oldMode: string(meta[0]), newMode: string(meta[1]), oldBlob: string(meta[2]), newBlob: string(meta[3])}
		if err := c.check(); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// check refuses a change apply cannot write: a submodule, an odd mode, a
// bad blob id, a path outside the project.
func (c change) check() error {
	for _, m := range []string{c.oldMode, c.newMode} {
		switch m {
		case modeNone, modeFile, modeExec, modeLink:
		case "160000":
			return &UnsafeError{Path: c.path, Reason: "is a submodule: apply writes files and links only"}
		default:
			return &UnsafeError{Path: c.path, Reason: "has a mode git does not give files (" + m + ")"}
		}
	}
	if !isObjectID(c.oldBlob) || !isObjectID(c.newBlob) {
		return &UnsafeError{Path: c.path, Reason: "has a blob id that is not one"}
	}
	return checkPath(c.path)
}
