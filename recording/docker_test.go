package recording_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/engine"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/recording"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

type rig struct {
	m       *service.Manager
	docker  *engine.Client
	project string
	rec     *recording.Recorder
}

// newRig starts a sandbox and a recorder of it, bounded at maxBytes (0:
// the default).
func newRig(t *testing.T, maxBytes int64) *rig {
	t.Helper()
	m, docker := dockertest.Manager(t, nil)
	dockertest.Run(t, m)
	project := dockertest.Project(t, docker)
	ctx := context.Background()
	if _, err := m.Start(ctx, project); err != nil {
		t.Fatal(err)
	}
	rec := recording.New(m, docker, recording.Config{Dir: t.TempDir(), Scope: dockertest.TestScope, MaxBytes: func() int64 { return maxBytes }})
	t.Cleanup(rec.Close)
	return &rig{m: m, docker: docker, project: project, rec: rec}
}

// probe is what ffprobe (in the recorder image) says of a file.
type probe struct {
	Streams []struct {
		CodecName    string `json:"codec_name"`
		Width        int    `json:"width"`
		NbReadFrames string `json:"nb_read_frames"`
	} `json:"streams"`
	Format struct {
		Duration string `json:"duration"`
	} `json:"format"`
}

func (p probe) seconds() float64 { f, _ := strconv.ParseFloat(p.Format.Duration, 64); return f }
func (p probe) frames() int {
	if len(p.Streams) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(p.Streams[0].NbReadFrames)
	return n
}

// ffprobe runs ffprobe in the recorder image beside the running sandbox,
// the file on its stdin: no ffmpeg on the host.
func (r *rig) ffprobe(t *testing.T, path string) probe {
	t.Helper()
	ctx := context.Background()
	tag, err := r.m.EnsureRecorder(ctx, r.project)
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.m.Status(ctx, r.project)
	if err != nil || st == nil {
		t.Fatalf("status: %v", err)
	}
	sess, err := r.docker.RunAttached(ctx, service.HelperSpec{
		Image: tag, User: "65534:65534", NetworkOf: st.ContainerID,
		Cmd: []string{"ffprobe", "-v", "error", "-count_frames", "-show_entries",
			"format=duration:stream=codec_name,width,nb_read_frames", "-of", "json", "-i", "pipe:0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	go func() {
		_, _ = io.Copy(sess, f)
		_ = sess.(interface{ CloseWrite() error }).CloseWrite()
	}()
	out, _ := io.ReadAll(io.LimitReader(sess, 1<<20))
	var p probe
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("ffprobe said %q (%s): %v", out, sess.Stderr(), err)
	}
	return p
}

// waitBytes polls the recording's facts until its file holds something:
// its first frame, of the desktop as it was.
func (r *rig) waitBytes(t *testing.T, id string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		list, err := r.rec.List(r.project)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range list {
			if info.ID == id && info.Bytes > 0 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("recording %s wrote nothing within 60s", id)
}

// waitEnded polls the recording's facts until it has ended by itself.
func (r *rig) waitEnded(t *testing.T, id string) recording.Info {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		list, err := r.rec.List(r.project)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range list {
			if info.ID == id && info.State != recording.StateRecording {
				return info
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("recording %s did not end within 60s", id)
	return recording.Info{}
}

func TestARecordingIsAVideoOfItsLength(t *testing.T) {
	r := newRig(t, 0)
	ctx := context.Background()
	id, err := r.rec.Start(ctx, r.project, 5)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := r.rec.Start(ctx, r.project, 5); err != nil || again != id {
		t.Fatalf("a second start: %q, %v; want the recording under way, %q", again, err, id)
	}
	time.Sleep(4 * time.Second) // the length of the recording, not a wait for a condition
	info, err := r.rec.Stop(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if info.State != recording.StateStopped || info.Bytes <= 0 || info.DurationMs < 3000 || info.DurationMs > 6000 {
		t.Fatalf("after 4 s: %+v", info)
	}
	fi, err := os.Stat(info.Path)
	if err != nil || fi.Size() != info.Bytes {
		t.Fatalf("the file: %v, %v; its facts say %d bytes", fi, err, info.Bytes)
	}
	p := r.ffprobe(t, info.Path)
	if len(p.Streams) != 1 || p.Streams[0].CodecName != "vp9" || p.Streams[0].Width != 1280 {
		t.Fatalf("ffprobe: %+v", p)
	}
	if got := p.seconds(); got*1000 < float64(info.DurationMs)-50 || got*1000 > float64(info.DurationMs)+50 {
		t.Fatalf("ffprobe reads %.3f s; the recording says %d ms", got, info.DurationMs)
	}
	if n := p.frames(); n < 15 || n > 30 {
		t.Fatalf("%d frames in about 4 s at 5 fps", n)
	}
	if again, err := r.rec.Stop(ctx, id); err != nil || again != info {
		t.Fatalf("a second stop: %+v, %v; want the same facts", again, err)
	}
}

func TestASandboxStoppedMidRecordingLeavesAPlayableFile(t *testing.T) {
	r := newRig(t, 0)
	ctx := context.Background()
	id, err := r.rec.Start(ctx, r.project, 5)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the length recorded before the stop
	if _, err := r.m.Stop(ctx, r.project); err != nil {
		t.Fatal(err)
	}
	info := r.waitEnded(t, id)
	if info.State != recording.StateEnded || info.Reason != "the sandbox stopped" || info.DurationMs < 2000 {
		t.Fatalf("after the sandbox's stop: %+v", info)
	}
	if _, err := r.m.Start(ctx, r.project); err != nil { // ffprobe runs beside a sandbox
		t.Fatal(err)
	}
	if p := r.ffprobe(t, info.Path); p.frames() < 10 || p.seconds() < 2 {
		t.Fatalf("ffprobe of the recording cut by the stop: %+v", p)
	}
}

// scrolling keeps an xterm full of changing text.
const scrolling = `xterm -geometry 160x50+0+0 -e sh -c 'while :; do date +%s%N; done' >/dev/null 2>&1 &`

func TestTheSizeBoundEndsARecordingAndSaysSo(t *testing.T) {
	const bound = 64 << 10
	r := newRig(t, bound)
	ctx := context.Background()
	id, err := r.rec.Start(ctx, r.project, 5)
	if err != nil {
		t.Fatal(err)
	}
	// Text scrolling on screen, once the first frame (of the still
	// desktop, small) is in, fills the bound in a few seconds.
	r.waitBytes(t, id)
	if _, err := r.m.Exec(ctx, r.project, service.ExecRequest{Command: scrolling, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	info := r.waitEnded(t, id)
	if info.State != recording.StateEnded || !strings.Contains(info.Reason, "size bound") || info.Bytes != bound {
		t.Fatalf("at the bound: %+v", info)
	}
	if p := r.ffprobe(t, info.Path); p.frames() < 1 {
		t.Fatalf("ffprobe of the file cut at its bound: %+v", p)
	}
	if id2, err := r.rec.Start(ctx, r.project, 5); err != nil || id2 == id {
		t.Fatalf("a new recording after the bound: %q, %v", id2, err)
	}
}

// smallDisk mounts a tmpfs of 256 KiB and fills it but for about room
// bytes; it skips the test where mounting is not allowed (not root).
func smallDisk(t *testing.T, room int64) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("cannot mount a small file system to fill (%v): run as root", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	var size int64
	for {
		n, err := f.Write(chunk)
		size += int64(n)
		if err != nil {
			break
		}
	}
	if err := f.Truncate(size - room); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestAFullDiskEndsTheRecordingAndNothingElse(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dockertest.Run(t, m)
	project := dockertest.Project(t, docker)
	ctx := context.Background()
	if _, err := m.Start(ctx, project); err != nil {
		t.Fatal(err)
	}
	rec := recording.New(m, docker, recording.Config{Dir: smallDisk(t, 96<<10), Scope: dockertest.TestScope})
	t.Cleanup(rec.Close)
	r := &rig{m: m, docker: docker, project: project, rec: rec}
	id, err := rec.Start(ctx, project, 5)
	if err != nil {
		t.Fatal(err)
	}
	r.waitBytes(t, id)
	if _, err := m.Exec(ctx, project, service.ExecRequest{Command: scrolling, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	info := r.waitEnded(t, id)
	if info.State != recording.StateEnded || info.Reason != "the disk is full" || info.Bytes == 0 {
		t.Fatalf("on a full disk: %+v", info)
	}
	if out, err := m.Exec(ctx, project, service.ExecRequest{Command: "echo still here", Timeout: 10 * time.Second}); err != nil || out.ExitCode != 0 {
		t.Fatalf("the sandbox after the recording's disk filled: %+v, %v", out, err)
	}
	if p := r.ffprobe(t, info.Path); p.frames() < 1 {
		t.Fatalf("ffprobe of the file cut by the full disk: %+v", p)
	}
}
