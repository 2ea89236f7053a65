package projectfs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Approvals are the user's approvals of what a project's repository content
// asks (a Dockerfile to build, limits above the caps), kept under the XDG
// state directory, one file per project: never in the repository, which
// a stranger may have written, and where an approval would be the
// repository's to forge.
type Approvals struct {
	dir string
}

// Approval is one approved request: its kind ("dockerfile", "limits"), the
// digest of exactly the content approved, what it said, and the content
// as the user saw it, so that the next request of the kind can show what
// changed (Content is kept only up to MaxKeptContent).
type Approval struct {
	Kind       string `json:"kind"`
	Digest     string `json:"digest"`
	Summary    string `json:"summary"`
	Content    string `json:"content,omitempty"`
	ApprovedAt int64  `json:"approvedAt"`
}

// MaxKeptContent bounds the content kept with an approval, so that the
// project's file (read up to MaxFileSize) holds every kind's.
const MaxKeptContent = 256 << 10

// ErrNoState: approvals cannot be kept without a state directory.
var ErrNoState = errors.New("no state directory to keep approvals in")

// NewApprovals returns the approvals under stateDir; without one nothing
// is approved and nothing can be.
func NewApprovals(stateDir string) Approvals {
	if stateDir == "" {
		return Approvals{}
	}
	return Approvals{dir: filepath.Join(stateDir, "approvals")}
}

// approvalsFile is one project's file.
type approvalsFile struct {
	Project  string     `json:"project"`
	Approved []Approval `json:"approved"`
}

func (a Approvals) name(project string) string {
	sum := sha256.Sum256([]byte(project))
	return hex.EncodeToString(sum[:8]) + ".json"
}

// Path is the file that keeps the project's approvals ("" without a state
// directory).
func (a Approvals) Path(project string) string {
	if a.dir == "" {
		return ""
	}
	return filepath.Join(a.dir, a.name(project))
}

// read loads the project's file; a missing or unreadable one approves
// nothing.
func (a Approvals) read(project string) approvalsFile {
	file := approvalsFile{Project: project}
	if a.dir == "" {
		return file
	}
	data, err := readBounded(a.Path(project), MaxFileSize)
	if err != nil || json.Unmarshal(data, &file) != nil || file.Project != project {
		return approvalsFile{Project: project}
	}
	return file
}

// Approved says whether the user approved this digest of this kind for
// the project.
func (a Approvals) Approved(project, kind, digest string) bool {
	for _, ap := range a.read(project).Approved {
		if ap.Kind == kind && ap.Digest == digest {
			return true
		}
	}
	return false
}

// Last is the project's approval of kind, if it has one.
func (a Approvals) Last(project, kind string) (Approval, bool) {
	for _, ap := range a.read(project).Approved {
		if ap.Kind == kind {
			return ap, true
		}
	}
	return Approval{}, false
}

// Approve records an approval. It replaces the project's earlier approval
// of the same kind: content that changes back asks again, and the file
// stays small. Content larger than MaxKeptContent (as JSON encodes it) is
// not kept.
func (a Approvals) Approve(project string, ap Approval, now time.Time) error {
	if a.dir == "" {
		return ErrNoState
	}
	ap.ApprovedAt = now.UnixMilli()
	if encoded, _ := json.Marshal(ap.Content); len(encoded) > MaxKeptContent {
		ap.Content = ""
	}
	if err := os.MkdirAll(a.dir, 0o700); err != nil {
		return fmt.Errorf("record the approval: %w", err)
	}
	// Two processes approving for one project at once (the panel and the
	// command line) each keep the other's kind.
	if unlock, err := lockWithin(a.Path(project)+".lock", registryLockWait); err == nil {
		defer unlock()
	}
	file := a.read(project)
	kept := []Approval{ap}
	for _, old := range file.Approved {
		if old.Kind != ap.Kind {
			kept = append(kept, old)
		}
	}
	file.Approved = kept
	data, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		return err
	}
	dir, err := openStateDir(a.dir)
	if err != nil {
		return fmt.Errorf("record the approval: %w", err)
	}
	defer dir.Close()
	if err := writeFileAtomic(dir, a.name(project), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("record the approval: %w", err)
	}
	return nil
}
