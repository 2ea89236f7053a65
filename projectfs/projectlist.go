package projectfs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// projectList is a list kept for each project under the user's own state
// directory, one file per project named by a hash of its path, which the
// file repeats:
//
//	{"project": "/home/me/app", "FIELD": [...]}
//
// Never in the project's directory: a repository a stranger wrote must not
// be able to write the user's decisions for it. Without a state directory
// nothing is kept.
type projectList[T any] struct {
	dir   string
	field string
	// order is the order the file keeps, or nil for the order given.
	order func(a, b T) int
}

func (l projectList[T]) name(project string) string {
	sum := sha256.Sum256([]byte(project))
	return hex.EncodeToString(sum[:8]) + ".json"
}

// path is the project's file ("" without a state directory).
func (l projectList[T]) path(project string) string {
	if l.dir == "" {
		return ""
	}
	return filepath.Join(l.dir, l.name(project))
}

// read returns the project's list; none when nothing was kept. A file that
// is not this project's list is an error (errCorrupt; it is left as it is).
func (l projectList[T]) read(project string) ([]T, error) {
	if l.dir == "" {
		return nil, nil
	}
	path := l.path(project)
	data, err := readBounded(path, MaxFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc map[string]json.RawMessage
	var owner string
	var list []T
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, errCorrupt, err)
	}
	if err := json.Unmarshal(doc["project"], &owner); err != nil || owner != project {
		return nil, fmt.Errorf("%s: %w: it is for %q", path, errCorrupt, owner)
	}
	if err := json.Unmarshal(doc[l.field], &list); err != nil {
		return nil, fmt.Errorf("%s: %w: %s: %v", path, errCorrupt, l.field, err)
	}
	return list, nil
}

// change applies fn to the project's list as the file has it now and
// writes the result, under the file's lock, so that two processes of the
// user do not lose each other's changes. fn's error leaves the file alone.
// A corrupt file is moved aside (NAME.corrupt-TIME) and counts as empty;
// an empty list removes the file.
func (l projectList[T]) change(project string, fn func([]T) ([]T, error)) error {
	if l.dir == "" {
		_, err := fn(nil)
		return err
	}
	dir, err := openStateDir(l.dir)
	if err != nil {
		return err
	}
	defer dir.Close()
	name := l.name(project)
	if unlock, err := lockWithin(filepath.Join(l.dir, name+".lock"), registryLockWait); err == nil {
		defer unlock()
	}
	list, err := l.read(project)
	if errors.Is(err, errCorrupt) {
		// Not a list this process wrote: kept aside, never overwritten.
		if _, err = setAside(dir, name, time.Now()); err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	if list, err = fn(slices.Clone(list)); err != nil {
		return err
	}
	if len(list) == 0 {
		if err := dir.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if l.order != nil {
		slices.SortStableFunc(list, l.order)
	}
	data, err := l.encode(project, list)
	if err != nil {
		return err
	}
	return writeFileAtomic(dir, name, data, 0o600)
}

// encode writes the file: the project first, then the list.
func (l projectList[T]) encode(project string, list []T) ([]byte, error) {
	owner, err := json.Marshal(project)
	if err != nil {
		return nil, err
	}
	items, err := json.MarshalIndent(list, "  ", "  ")
	if err != nil {
		return nil, err
	}
	field, _ := json.Marshal(l.field)
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\n  \"project\": %s,\n  %s: %s\n}\n", owner, field, items)
	return b.Bytes(), nil
}

// Stamp tells a changed file from the one read before: another process
// of the user may change it.
type Stamp struct {
	mod  time.Time
	size int64
}

// stamp is the project's file's stamp now (the zero Stamp for none).
func (l projectList[T]) stamp(project string) Stamp {
	if l.dir == "" {
		return Stamp{}
	}
	info, err := os.Stat(l.path(project))
	if err != nil {
		return Stamp{}
	}
	return Stamp{mod: info.ModTime(), size: info.Size()}
}
