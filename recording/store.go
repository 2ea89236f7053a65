package recording

import (
	"cmp"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// Bounds of what List reads back: the facts are the sidecar's own, but
// the folder is the user's.
const (
	infoMax = 64 << 10
	listMax = 1000
)

// idPattern is what newID makes; anything else names no recording (and
// no path).
var idPattern = regexp.MustCompile(`^[0-9]{8}-[0-9]{6}-[0-9a-f]{8}$`)

// writeInfo writes a recording's facts beside its file.
func writeInfo(info Info) error {
	return projectfs.WriteStateFile(filepath.Dir(info.Path), info.ID+".json", func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(info)
	})
}

func readInfo(path string) (Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return Info{}, err
	}
	defer f.Close()
	var info Info
	err = json.NewDecoder(io.LimitReader(f, infoMax)).Decode(&info)
	return info, err
}

// List is the project's recordings, newest first: those ended, and those
// under way with what they hold so far.
func (r *Recorder) List(project string) ([]Info, error) {
	paths, err := filepath.Glob(filepath.Join(r.cfg.Dir, "*", "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, p := range paths {
		if !idPattern.MatchString(trimExt(filepath.Base(p))) {
			continue
		}
		info, err := readInfo(p)
		if err != nil || info.ProjectPath != project {
			continue
		}
		out = append(out, r.live(info))
	}
	slices.SortFunc(out, func(a, b Info) int { return cmp.Compare(b.StartedAt, a.StartedAt) })
	if len(out) > listMax {
		out = out[:listMax]
	}
	return out, nil
}

// live is info with the bytes of a recording under way in this process,
// or the end this process could not write.
func (r *Recorder) live(info Info) Info {
	r.mu.Lock()
	_, ok := r.active[info.ID]
	ended, unsaved := r.unsaved[info.ID]
	r.mu.Unlock()
	switch {
	case unsaved:
		return ended
	case !ok && info.State == StateRecording:
		return r.settle(info)
	case !ok:
		return info
	}
	if fi, err := os.Stat(info.Path); err == nil {
		info.Bytes = fi.Size()
	}
	info.DurationMs = r.cfg.Now().UnixMilli() - info.StartedAt
	return info
}

// find is the facts of a recording by its ID.
func (r *Recorder) find(id string) (Info, error) {
	if !idPattern.MatchString(id) {
		return Info{}, ErrNotFound
	}
	paths, _ := filepath.Glob(filepath.Join(r.cfg.Dir, "*", id+".json"))
	if len(paths) == 0 {
		return Info{}, ErrNotFound
	}
	info, err := readInfo(paths[0])
	return r.live(info), err
}

func trimExt(name string) string { return name[:len(name)-len(filepath.Ext(name))] }

// Open opens the video of one of the project's recordings, for the
// panel's player: a recording of another project is ErrNotFound, and so
// is a path its facts name outside the recordings' folder.
func (r *Recorder) Open(id, project string) (*os.File, time.Time, error) {
	info, err := r.find(id)
	if err != nil || info.ProjectPath != project {
		return nil, time.Time{}, ErrNotFound
	}
	want := filepath.Join(r.cfg.Dir, info.ContainerName, info.ID+".webm")
	if info.Path != want || filepath.Dir(filepath.Dir(want)) != filepath.Clean(r.cfg.Dir) {
		return nil, time.Time{}, ErrNotFound
	}
	f, err := os.Open(want)
	if err != nil {
		return nil, time.Time{}, ErrNotFound
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, time.Time{}, ErrNotFound
	}
	return f, fi.ModTime(), nil
}
