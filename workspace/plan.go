package workspace

import (
	"context"
	"io/fs"
	"path/filepath"
)

// plan is what a sync sends: the files whose content the sandbox lacks,
// and the files it has that the project no longer does.
type plan struct {
	full   bool   // the sandbox's files are unknown: send all, remove the rest
	base   string // the base the manifest was made against
	send   []listed
	remove []string
	// next is the manifest after the sync: the files not sent as they
	// are, the sent ones without their blob id until the stream has it.
	next map[string]entry
	// files and bytes count the project's files and their sizes.
	files     int
	bytes     int64
	sendBytes int64
}

// makePlan lists the project and compares it with the manifest old.
func (w *Workspace) makePlan(ctx context.Context, old *manifest) (*plan, error) {
	p := &plan{full: old.base == "", base: old.base, next: make(map[string]entry, len(old.files))}
	err := listProject(ctx, w.project, func(l listed) error {
		p.files++
		if l.info.Mode().IsRegular() {
			p.bytes += l.info.Size()
		}
		if e, ok := w.unchanged(old, l); ok {
			p.next[l.rel] = e
			return nil
		}
		p.send = append(p.send, l)
		p.next[l.rel] = entry{stamp: stampOf(l.info)}
		if l.info.Mode().IsRegular() {
			p.sendBytes += l.info.Size()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for rel := range old.files {
		if _, ok := p.next[rel]; !ok {
			p.remove = append(p.remove, rel)
		}
	}
	return p, nil
}

// unchanged says whether the sandbox has the listed file as it is now, and
// its manifest entry if so: its stamp is the manifest's, or only the
// stamp changed (its kind and blob did not).
func (w *Workspace) unchanged(old *manifest, l listed) (entry, bool) {
	e, ok := old.files[l.rel]
	if !ok {
		return entry{}, false
	}
	s := stampOf(l.info)
	switch {
	case e.stamp == s:
		return e, true
	case !sameKind(e.stamp.mode, s.mode) || l.info.Mode()&fs.ModeType == 0 && e.stamp.size != s.size:
		return entry{}, false
	}
	blob, err := blobOf(filepath.Join(w.project, filepath.FromSlash(l.rel)), l.info)
	if err != nil || blob != e.blob {
		return entry{}, false // a file that fails to read now is sent, or found gone
	}
	return entry{blob: blob, stamp: s}, true
}
