package workspace

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Limits of what apply reads from the sandbox.
const (
	// MaxApplyBytes bounds the contents one apply writes (all files).
	MaxApplyBytes = 16 << 30
	// maxLinkTarget bounds a link's target (PATH_MAX).
	maxLinkTarget = 4096
	// maxBatchHeader bounds a header line of git cat-file --batch.
	maxBatchHeader = 256
)

// staged is a change's new content, written to a temporary file (or link)
// at tmp, a path relative to the project.
type staged struct {
	tmp string
}

// stage fetches the new content of every change that has one, in one
// `git cat-file --batch` in the sandbox, and writes each to a temporary
// file. On failure it removes what it wrote.
func (w *Workspace) stage(ctx context.Context, root *os.Root, todo []change) (map[string]staged, error) {
	var ids strings.Builder
	var wanted []change
	for _, c := range todo {
		if !c.deleted() {
			ids.WriteString(c.newBlob + "\n")
			wanted = append(wanted, c)
		}
	}
	out := make(map[string]staged, len(wanted))
	if len(wanted) == 0 {
		return out, nil
	}
	pr, pw := io.Pipe()
	read := make(chan error, 1)
	go func() {
		// Ends when every content is read or the exec's output ends
		// (pw closed below).
		err := readBatch(root, pr, wanted, out)
		pr.CloseWithError(err)
		read <- err
	}()
	res, err := w.sandbox.Exec(ctx, Command{Argv: w.command("blobs"), Stdin: strings.NewReader(ids.String()), Stdout: pw, MaxOutput: maxAnswer})
	pw.CloseWithError(io.ErrUnexpectedEOF)
	// What went wrong in the reading is the cause; the exec would only say
	// its output stopped being read.
	if rerr := <-read; rerr != nil {
		err = rerr
	} else if err == nil {
		err = programError("blobs", res)
	}
	if err != nil {
		removeStaged(root, out)
		return nil, fmt.Errorf("fetch the task's files; nothing was written: %w", err)
	}
	return out, nil
}

// readBatch reads cat-file's answers, one for each wanted change in order,
// into temporary files.
func readBatch(root *os.Root, r io.Reader, wanted []change, out map[string]staged) error {
	br := bufio.NewReaderSize(r, 256<<10)
	var total int64
	for _, c := range wanted {
		size, err := batchHeader(br, c.newBlob)
		if err != nil {
			return fmt.Errorf("%s: %w", quote(c.path), err)
		}
		if total += size; total > MaxApplyBytes {
			return fmt.Errorf("the change is larger than %d GiB", MaxApplyBytes>>30)
		}
		tmp, err := writeStaged(root, c, io.LimitReader(br, size), size)
		if err != nil {
			return err
		}
		out[c.path] = staged{tmp: tmp}
		if b, err := br.ReadByte(); err != nil || b != '\n' {
			return fmt.Errorf("%s: git's batch output lost its place", quote(c.path))
		}
	}
	return nil
}

// batchHeader reads "<id> blob <size>\n" and checks it is the blob asked
// for.
func batchHeader(br *bufio.Reader, id string) (int64, error) {
	line, err := br.ReadSlice('\n')
	if err != nil || len(line) > maxBatchHeader {
		return 0, errors.New("git's batch output ended or is garbled")
	}
	f := strings.Fields(string(line))
	if len(f) != 3 || f[0] != id || f[1] != "blob" {
		return 0, fmt.Errorf("the sandbox has no blob %s (it said %q)", id, strings.TrimSpace(string(line)))
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || size < 0 {
		return 0, fmt.Errorf("a blob size reads %q", f[2])
	}
	return size, nil
}

// writeStaged writes one content to a new temporary file or link in the
// deepest existing directory on the way to c's path, and checks it against
// c's blob id.
func writeStaged(root *os.Root, c change, content io.Reader, size int64) (string, error) {
	tmp := path.Join(existingDir(root, c.path), applyTempPrefix+rand.Text()[:12])
	if c.newMode == modeLink {
		return tmp, stageLink(root, c, content, size, tmp)
	}
	f, err := root.OpenFile(filepath.FromSlash(tmp), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", &WriteError{Path: tmp, Err: fmt.Errorf("write into the project: %w", err)}
	}
	h := blobHash(size)
	n, err := io.Copy(io.MultiWriter(f, h), content)
	if err == nil && n < size {
		err = io.ErrUnexpectedEOF
	}
	if err == nil && hexSum(h) != c.newBlob {
		err = fmt.Errorf("the sandbox sent content for %s that is not its blob", quote(c.path))
	}
	if err == nil {
		err = f.Chmod(newPerm(root, c))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		root.Remove(filepath.FromSlash(tmp))
		return "", err
	}
	return tmp, nil
}

// stageLink checks a link's target (it must stay in the project) and makes
// the link at tmp.
func stageLink(root *os.Root, c change, content io.Reader, size int64, tmp string) error {
	if size > maxLinkTarget {
		return &UnsafeError{Path: c.path, Reason: "is a link with a target longer than PATH_MAX"}
	}
	target := make([]byte, size)
	if _, err := io.ReadFull(content, target); err != nil {
		return err
	}
	if linkBlob(string(target)) != c.newBlob {
		return fmt.Errorf("the sandbox sent a target for %s that is not its blob", quote(c.path))
	}
	if err := checkLinkTarget(c.path, string(target)); err != nil {
		return err
	}
	return root.Symlink(string(target), filepath.FromSlash(tmp))
}

// checkLinkTarget refuses a link that leads out of the project: absolute,
// or climbing above the project's root.
func checkLinkTarget(p, target string) error {
	joined := path.Join(path.Dir(p), target)
	if target == "" || strings.ContainsRune(target, 0) || path.IsAbs(target) || filepath.IsAbs(target) ||
		joined == ".." || strings.HasPrefix(joined, "../") {
		return &UnsafeError{Path: p, Reason: "is a link that leads out of the project (" + quote(target) + ")"}
	}
	return nil
}

// existingDir is the deepest directory on the way to p that exists (as a
// directory: a file there is one the change deletes).
func existingDir(root *os.Root, p string) string {
	dir := path.Dir(p)
	for dir != "." {
		if info, err := root.Lstat(filepath.FromSlash(dir)); err == nil && info.IsDir() {
			return dir
		}
		dir = path.Dir(dir)
	}
	return "."
}

// newPerm is the permission a written file gets: the host file's, with the
// executable bits as the task left them; 0644 or 0755 for a new file.
func newPerm(root *os.Root, c change) fs.FileMode {
	perm := fs.FileMode(0o644)
	if info, err := root.Lstat(filepath.FromSlash(c.path)); err == nil && info.Mode().IsRegular() {
		perm = info.Mode().Perm() &^ 0o111
	}
	if c.newMode == modeExec {
		perm |= (perm & 0o444) >> 2
	}
	return perm
}

func removeStaged(root *os.Root, out map[string]staged) {
	for _, s := range out {
		root.Remove(filepath.FromSlash(s.tmp))
	}
}

// commitStaged removes what the change deletes, then moves each staged
// content into place, making missing directories. A failure here leaves
// the change half made (Apply's step 4).
func commitStaged(root *os.Root, todo []change, out map[string]staged) error {
	halfMade := func(i int, verb, p string, err error) error {
		removeStaged(root, out)
		if i == 0 {
			return &WriteError{Path: p, Err: fmt.Errorf("%s %s: nothing was written: %w", verb, quote(p), err)}
		}
		return &WriteError{Path: p, HalfMade: true, Err: fmt.Errorf("%s %s after %d of %d changes: the change is half made; apply it again to finish: %w", verb, quote(p), i, len(todo), err)}
	}
	done := 0
	for _, c := range todo {
		if !c.deleted() {
			continue
		}
		if err := root.Remove(filepath.FromSlash(c.path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return halfMade(done, "remove", c.path, err)
		}
		pruneEmptyDirs(root, path.Dir(c.path))
		done++
	}
	for _, c := range todo {
		s, ok := out[c.path]
		if !ok {
			continue
		}
		err := root.MkdirAll(filepath.FromSlash(path.Dir(c.path)), 0o755)
		if err == nil {
			err = root.Rename(filepath.FromSlash(s.tmp), filepath.FromSlash(c.path))
		}
		if err != nil {
			return halfMade(done, "move into place", c.path, err)
		}
		delete(out, c.path)
		done++
	}
	return nil
}

// pruneEmptyDirs removes dir and its parents while they are empty, as git
// does when a file's removal empties them.
func pruneEmptyDirs(root *os.Root, dir string) {
	for dir != "." && root.Remove(filepath.FromSlash(dir)) == nil {
		dir = path.Dir(dir)
	}
}
