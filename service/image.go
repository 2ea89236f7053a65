package service

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultImage is the tag the sidecar builds its sandbox image under.
const DefaultImage = "pilot-sandbox:latest"

// buildContext is the sandbox image's build context as a tar archive, and a
// hash of everything that goes into the build: the files, their modes and the
// build arguments. The image carries the hash as a label, so a binary with
// different resources rebuilds it.
type buildContext struct {
	tar  []byte
	hash string
}

func newBuildContext(files fs.FS, buildArgs map[string]string) (buildContext, error) {
	var paths []string
	err := fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			paths = append(paths, path)
		}
		return err
	})
	if err != nil {
		return buildContext{}, err
	}
	slices.Sort(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	sum := sha256.New()
	for _, path := range paths {
		data, err := fs.ReadFile(files, path)
		if err != nil {
			return buildContext{}, err
		}
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
	return buildContext{tar: buf.Bytes(), hash: hex.EncodeToString(sum.Sum(nil))[:16]}, nil
}

// buildLogLines is how much of the build output a failed build keeps.
const buildLogLines = 40

// EnsureImage builds the sandbox image unless an image with this binary's
// build hash exists, reporting progress for project (which may be "").
// Only one check or build runs at a time; others wait for it.
func (m *Manager) EnsureImage(ctx context.Context, project string) error {
	m.imageMu.Lock()
	defer m.imageMu.Unlock()
	labels, err := m.docker.ImageLabels(ctx, m.cfg.Image)
	switch {
	case err == nil && labels[LabelImageHash] == m.build.hash:
		return nil
	case err != nil && !errors.Is(err, ErrImageNotFound):
		return fmt.Errorf("inspect image %s: %w", m.cfg.Image, err)
	}
	reason := "is missing"
	if err == nil {
		reason = "is out of date"
	}
	m.log.Info().Str("image", m.cfg.Image).Str("hash", m.build.hash).Msg("building the sandbox image: it " + reason)
	m.progress(project, StageImage, fmt.Sprintf("Building the sandbox image %s (it %s)", m.cfg.Image, reason), 0, 0)

	tail := &lineTail{max: buildLogLines}
	steps := &stepProgress{report: func(msg string, cur, total int) { m.progress(project, StageImage, msg, cur, total) }}
	err = m.docker.BuildImage(ctx, BuildSpec{
		Tag:       m.cfg.Image,
		Context:   bytes.NewReader(m.build.tar),
		Labels:    map[string]string{LabelImageHash: m.build.hash, LabelSandbox: "image"},
		BuildArgs: m.cfg.BuildArgs,
		Output: func(line string) {
			tail.add(line)
			steps.line(line)
			m.log.Debug().Str("build", line).Msg("image build")
		},
	})
	if err != nil {
		if errors.Is(err, ErrDockerUnavailable) || errors.Is(err, context.Canceled) {
			return err
		}
		return NewBuildError(tail.lines(), err)
	}
	m.progress(project, StageImage, "Built the sandbox image "+m.cfg.Image, 0, 0)
	return nil
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

// lineTail keeps the last max lines added.
type lineTail struct {
	max int
	buf []string
}

func (t *lineTail) add(line string) {
	t.buf = append(t.buf, line)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
}

func (t *lineTail) lines() []string { return slices.Clone(t.buf) }
