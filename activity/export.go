package activity

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// An export is a session as one folder a person can keep or send
// (docs/activity.md, Export): actions.jsonl (the entries of a time window,
// oldest first, each acting tool's thumbnails named instead of inlined),
// screens/ (those thumbnails as JPEG files) and recordings/ (the videos of
// that time, copied). It is written into a new folder and never into one
// that exists, so nothing of the user's is replaced.

// Window is a span of time in Unix milliseconds; a zero end is open.
type Window struct{ From, To int64 }

// Has reports whether t is in w.
func (w Window) Has(t int64) bool { return t >= w.From && (w.To == 0 || t <= w.To) }

// Overlaps reports whether the span from start to end (0: still going)
// meets w.
func (w Window) Overlaps(start, end int64) bool {
	return (w.To == 0 || start <= w.To) && (end == 0 || end >= w.From)
}

// Exported is what an export wrote.
type Exported struct {
	Dir        string   `json:"dir"`
	Entries    int      `json:"entries"`
	Screens    int      `json:"screens"`
	Recordings []string `json:"recordings"`
}

// exportedEntry is an entry of actions.jsonl: its thumbnails as the names
// of their files in the folder.
type exportedEntry struct {
	Entry             // its Before and After left empty
	BeforeFile string `json:"beforeFile,omitempty"`
	AfterFile  string `json:"afterFile,omitempty"`
}

// ExportDir is where an export goes when its caller names no folder:
// exports/ beside the timelines, one folder per export.
func (l *Log) ExportDir(project string, now time.Time) string {
	return filepath.Join(filepath.Dir(l.dir), "exports",
		fmt.Sprintf("%s-%s-%s", filepath.Base(project), key(project)[:6], now.UTC().Format("20060102-150405.000")))
}

// Export writes the project's entries in w into dir, a folder it creates
// (its parent must exist; an existing dir is refused, nothing written),
// and copies the files named in recordings (the videos of that time) into
// its recordings/.
func (l *Log) Export(project, dir string, w Window, recordings []string) (Exported, error) {
	out := Exported{Dir: dir, Recordings: []string{}}
	if !filepath.IsAbs(dir) {
		return out, &ExportError{Dir: dir, Reason: "is not an absolute path"}
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, os.ErrExist) {
			return out, &ExportError{Dir: dir, Reason: "exists already: an export goes into a new folder"}
		}
		return out, &ExportError{Dir: dir, Reason: err.Error()}
	}
	entries, err := l.Read(project, 0, 0)
	if err != nil {
		return out, err
	}
	if err := out.writeEntries(entries, w); err != nil {
		return out, err
	}
	for _, src := range recordings {
		if err := out.copyRecording(src); err != nil {
			return out, err
		}
	}
	return out, nil
}

func (out *Exported) writeEntries(entries []Entry, w Window) error {
	screens := filepath.Join(out.Dir, "screens")
	if err := os.Mkdir(screens, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(out.Dir, "actions.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, e := range entries {
		if !w.Has(e.Time) {
			continue
		}
		x := exportedEntry{Entry: e}
		x.Before, x.After = nil, nil
		if x.BeforeFile, err = out.writeScreen(screens, e.Seq, "before", e.Before); err != nil {
			break
		}
		if x.AfterFile, err = out.writeScreen(screens, e.Seq, "after", e.After); err != nil {
			break
		}
		if err = enc.Encode(x); err != nil {
			break
		}
		out.Entries++
	}
	return errors.Join(err, f.Close())
}

// writeScreen writes a thumbnail as screens/SEQ-WHEN.jpg and returns its
// name in the folder; no thumbnail, no file.
func (out *Exported) writeScreen(screens string, seq int64, when string, jpeg []byte) (string, error) {
	if len(jpeg) == 0 {
		return "", nil
	}
	name := fmt.Sprintf("%06d-%s.jpg", seq, when)
	if err := os.WriteFile(filepath.Join(screens, name), jpeg, 0o600); err != nil {
		return "", err
	}
	out.Screens++
	return filepath.Join("screens", name), nil
}

func (out *Exported) copyRecording(src string) error {
	dir := filepath.Join(out.Dir, "recordings")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	name := filepath.Base(src)
	to, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(to, in)
	if err = errors.Join(err, to.Close()); err != nil {
		return err
	}
	out.Recordings = append(out.Recordings, filepath.Join("recordings", name))
	return nil
}

// ExportError is a folder an export cannot go into.
type ExportError struct{ Dir, Reason string }

func (e *ExportError) Error() string { return fmt.Sprintf("export folder %s %s", e.Dir, e.Reason) }
