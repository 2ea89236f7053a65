package images

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The files of an image become what the engine builds: a tar build context
// with a hash of everything that goes into it (files, modes, build
// arguments), and the build's output becomes progress and the last lines
// kept for the error.

// buildContext is an image's build context as a tar archive, and a
// hash of everything that goes into the build: the files, their modes and the
// build arguments. The image carries the hash as a label, so a binary with
// different resources rebuilds it.
type buildContext struct {
	Tar  []byte
	Hash string
}

// newBuildContext packs files (the Dockerfile at the root) as a build context,
// and hashes them with the build arguments.
func newBuildContext(files fs.FS, buildArgs map[string]string) (buildContext, error) {
	return newBuildContextWith(files, nil, buildArgs)
}

// newBuildContextWith is newBuildContext with extra files beside those of
// files (the CA certificates the agent CLIs' layer adds: agents.go), by
// their paths in the context; an extra file may not replace one of files.
func newBuildContextWith(files fs.FS, extra map[string][]byte, buildArgs map[string]string) (buildContext, error) {
	contents := map[string][]byte{}
	err := fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		contents[path], err = fs.ReadFile(files, path)
		return err
	})
	if err != nil {
		return buildContext{}, err
	}
	for path, data := range extra {
		if _, ok := contents[path]; ok || !fs.ValidPath(path) {
			return buildContext{}, fmt.Errorf("the build context cannot take %q beside its files", path)
		}
		contents[path] = data
	}
	paths := slices.Sorted(maps.Keys(contents))
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	sum := sha256.New()
	for _, path := range paths {
		data := contents[path]
		mode := int64(0o644)
		if strings.HasSuffix(path, ".sh") {
			mode = 0o755
		}
		hdr := &tar.Header{Name: path, Mode: mode, Size: int64(len(data)), ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			return buildContext{}, err
		}
		if _, err := tw.Write(data); err != nil {
			return buildContext{}, err
		}
		fmt.Fprintf(sum, "%s\x00%o\x00%d\x00", path, mode, len(data))
		sum.Write(data)
	}
	if err := tw.Close(); err != nil {
		return buildContext{}, err
	}
	keys := make([]string, 0, len(buildArgs))
	for k := range buildArgs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(sum, "arg\x00%s\x00%s\x00", k, buildArgs[k])
	}
	return buildContext{Tar: buf.Bytes(), Hash: hex.EncodeToString(sum.Sum(nil))[:16]}, nil
}

// stepRE matches the classic builder's "Step 3/9 : RUN ..." lines.
var stepRE = regexp.MustCompile(`^Step (\d+)/(\d+) : (.*)$`)

// stepProgress turns build output into progress: every step, and other lines
// at most once a second so a long apt-get does not flood the client.
type stepProgress struct {
	report  func(msg string, current, total int)
	current int
	total   int
	last    time.Time
}

// line takes one line of build output.
func (s *stepProgress) line(line string) {
	if m := stepRE.FindStringSubmatch(line); m != nil {
		s.current, _ = strconv.Atoi(m[1])
		s.total, _ = strconv.Atoi(m[2])
		s.last = time.Now()
		s.report(fmt.Sprintf("Step %d/%d: %s", s.current, s.total, m[3]), s.current, s.total)
		return
	}
	if time.Since(s.last) >= time.Second {
		s.last = time.Now()
		s.report(line, s.current, s.total)
	}
}

// lastLines keeps the last lines added.
type lastLines struct {
	max int
	buf []string
}

// add keeps line, dropping the oldest past the limit.
func (t *lastLines) add(line string) {
	t.buf = append(t.buf, line)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
}

// lines are the lines kept, oldest first.
func (t *lastLines) lines() []string { return slices.Clone(t.buf) }

// newStepProgress reports progress through report.
func newStepProgress(report func(msg string, current, total int)) *stepProgress {
	return &stepProgress{report: report}
}

// newLastLines keeps the last max lines.
func newLastLines(max int) *lastLines { return &lastLines{max: max} }

// on returns the context of an image built FROM the image whose hash is
// parent: its hash covers the parent's, so a change of the image below
// rebuilds this one too.
func (c buildContext) on(parent string) buildContext {
	sum := sha256.Sum256([]byte(parent + "\x00" + c.Hash))
	return buildContext{Tar: c.Tar, Hash: hex.EncodeToString(sum[:])[:16]}
}
