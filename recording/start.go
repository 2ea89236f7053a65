package recording

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// The recorder's bounds: VP9 in realtime mode at 1280x800 holds about 100
// MiB; its threads (-threads 2, and ffmpeg's own) count against PidsLimit.
var recorderLimits = service.Limits{MemoryBytes: 512 << 20, PidsLimit: 64, NanoCPUs: 1e9}

// The display's cookie (resources/docker/sandbox/entrypoint.sh), readable
// by the sandbox user's group; a few dozen bytes, bounded all the same.
const (
	cookiePath = "/run/pilot-x/Xauthority"
	cookieMax  = 4 << 10
)

// Start records the project's running sandbox at fps frames a second (0:
// DefaultFPS) and returns the recording's ID; a sandbox that records
// already returns that recording's. The recorder image is built first
// when missing (a minute or two, once).
func (r *Recorder) Start(ctx context.Context, project string, fps int) (string, error) {
	if fps == 0 {
		fps = DefaultFPS
	}
	if fps < 1 || fps > MaxFPS {
		return "", ErrBadFPS
	}
	st, err := r.sandboxes.Status(ctx, project)
	switch {
	case err != nil:
		return "", err
	case st == nil:
		return "", service.ErrNoSandbox
	case st.Status != service.StatusRunning:
		return "", fmt.Errorf("%w: it is %s", service.ErrNotRunning, st.Status)
	}
	r.startMu.Lock()
	defer r.startMu.Unlock()
	if id := r.recordingOf(st.ContainerID); id != "" {
		return id, nil
	}
	tag, err := r.sandboxes.EnsureRecorder(ctx, project)
	if err != nil {
		return "", err
	}
	cookie, err := r.cookie(ctx, project)
	if err != nil {
		return "", err
	}
	id := newID(r.cfg.Now())
	sess, err := r.docker.RunAttached(ctx, r.spec(tag, id, st.ContainerID, fps, len(cookie)))
	if err != nil {
		return "", fmt.Errorf("start the recorder: %w", err)
	}
	ru, err := r.open(id, st, fps, sess)
	if err == nil {
		_, err = sess.Write(cookie)
	}
	if err != nil {
		sess.Close()
		if ru != nil {
			<-ru.done
		}
		return "", err
	}
	return ru.id, nil
}

// spec is the recorder's container for a sandbox.
func (r *Recorder) spec(image, id, containerID string, fps, cookieLen int) service.HelperSpec {
	return service.HelperSpec{
		Image:  image,
		Labels: map[string]string{LabelRecorder: r.cfg.Scope, LabelRecorderOf: containerID, LabelRecording: id},
		User:   "65534:65534",
		Cmd: []string{"/usr/local/bin/pilot-record", strconv.Itoa(fps),
			strconv.Itoa(int(r.cfg.MaxDuration.Seconds())), strconv.Itoa(cookieLen),
			strings.TrimPrefix(desktop.DisplayEnv, "DISPLAY=")},
		NetworkOf: containerID,
		Limits:    recorderLimits,
	}
}

// cookie reads the display's X cookie from the sandbox.
func (r *Recorder) cookie(ctx context.Context, project string) ([]byte, error) {
	res, err := r.sandboxes.ExecArgv(ctx, project, service.ExecSpec{
		Cmd: []string{"cat", cookiePath}, Timeout: 10 * time.Second, MaxOutput: cookieMax,
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("read the display's cookie: %w", err)
	case res.ExitCode != 0 || res.Truncated || len(res.Stdout) == 0:
		return nil, fmt.Errorf("read the display's cookie: exit %d, %d bytes: %s",
			res.ExitCode, len(res.Stdout), strings.TrimSpace(string(res.Stderr)))
	}
	return res.Stdout, nil
}

// recordingOf is the ID of the sandbox container's recording, or "".
func (r *Recorder) recordingOf(containerID string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, ru := range r.active {
		if ru.containerID == containerID {
			return id
		}
	}
	return ""
}

// open makes the recording's file and facts and starts copying sess into
// it; on an error after that (the run exists), the caller closes sess and
// waits for the run's end.
func (r *Recorder) open(id string, st *service.State, fps int, sess service.ExecSession) (*run, error) {
	now := r.cfg.Now()
	dir := filepath.Join(r.cfg.Dir, st.ContainerName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("the recordings' folder: %w", err)
	}
	path := filepath.Join(dir, id+".webm")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the recording's file: %w", err)
	}
	ru := &run{
		id: id, containerID: st.ContainerID, maxBytes: r.maxBytes(), sess: sess, file: f, scan: newScanner(), done: make(chan struct{}),
		info: Info{ID: id, ProjectPath: st.ProjectPath, ContainerName: st.ContainerName, Path: path,
			MimeType: "video/webm", FPS: fps, State: StateRecording, StartedAt: now.UnixMilli()},
	}
	if err := writeInfo(ru.info); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("the recording's facts: %w", err)
	}
	r.mu.Lock()
	closed := r.closed
	if !closed {
		r.active[id] = ru
	}
	r.mu.Unlock()
	if closed {
		f.Close()
		os.Remove(path)
		os.Remove(filepath.Join(dir, id+".json"))
		return nil, ErrClosed
	}
	go r.record(ru)
	return ru, nil
}

// newID is a recording's ID: its start, sortable, and a random part.
func newID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}
