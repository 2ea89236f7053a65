package recording

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// run is one recording under way, from open to the end written.
type run struct {
	id, containerID string
	maxBytes        int64 // the size bound
	sess            service.ExecSession
	file            *os.File      // written by record alone
	scan            *scanner      // fed by record alone
	done            chan struct{} // closed once its end is written

	mu      sync.Mutex // guards info, stopped and reason
	info    Info
	stopped bool   // a stop (or the sidecar's exit) asked the end
	reason  string // why it ended, when not asked
}

// maxUnsaved bounds the facts kept in memory for want of a disk.
const maxUnsaved = 256

// stopWait bounds how long a stop waits for ffmpeg to end its file before
// it cuts the stream (what was written stays playable).
const stopWait = 15 * time.Second

// record copies the recorder's stream into the file until it ends, then
// writes the end.
func (r *Recorder) record(ru *run) {
	buf := make([]byte, 64<<10)
	var written int64
	full := false
	for {
		n, err := ru.sess.Read(buf)
		if n > 0 && !full {
			k, why := r.keep(ru, buf[:n], written)
			written += int64(k)
			if why != "" {
				full = true
				ru.end(why)
				ru.sess.Close()
			}
		}
		if err != nil {
			break
		}
	}
	r.finish(ru, written)
}

// keep writes p to the file within the size bound; why says why the
// recording must end (the bound, a failed write), or is empty.
func (r *Recorder) keep(ru *run, p []byte, written int64) (int, string) {
	room := ru.maxBytes - written
	cut := int64(len(p)) > room
	if cut {
		p = p[:room]
	}
	k, err := ru.file.Write(p)
	ru.scan.Write(p[:k])
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return k, "the disk is full"
	case err != nil:
		return k, fmt.Sprintf("could not write the file: %v", err)
	case cut:
		return k, "it reached its size bound (" + sizeOf(ru.maxBytes) + ")"
	}
	return k, ""
}

// end records why the recording ends, unless a reason came first.
func (ru *run) end(why string) {
	ru.mu.Lock()
	if ru.reason == "" && !ru.stopped {
		ru.reason = why
	}
	ru.mu.Unlock()
}

// finish writes the recording's real duration into its file and its facts
// beside it, and lets it go.
func (r *Recorder) finish(ru *run, written int64) {
	ru.sess.Close()
	ms := ru.scan.durationMs(ru.info.FPS)
	err := ru.scan.writeDuration(ru.file, ms)
	if err == nil {
		err = ru.file.Sync()
	}
	if cerr := ru.file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		ru.end(fmt.Sprintf("could not finish the file: %v", err))
	}
	ru.mu.Lock()
	asked := ru.stopped || ru.reason != ""
	ru.mu.Unlock()
	if !asked {
		ru.end(r.whyEnded(ru))
	}
	ru.mu.Lock()
	ru.info.EndedAt = r.cfg.Now().UnixMilli()
	ru.info.DurationMs, ru.info.Bytes = ms, written
	ru.info.State, ru.info.Reason = StateEnded, ru.reason
	if ru.stopped {
		ru.info.State = StateStopped
	}
	info := ru.info
	ru.mu.Unlock()
	saveErr := writeInfo(info)
	if saveErr != nil {
		r.cfg.Logger.Warn().Err(saveErr).Str("recording", ru.id).Msg("could not write the recording's facts; this process keeps them")
	}
	r.mu.Lock()
	delete(r.active, ru.id)
	if saveErr != nil && len(r.unsaved) < maxUnsaved {
		r.unsaved[ru.id] = info
	}
	r.mu.Unlock()
	close(ru.done)
}

// whyEnded says why a recorder ended that no one asked to end.
func (r *Recorder) whyEnded(ru *run) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := r.sandboxes.Status(ctx, ru.info.ProjectPath)
	if err == nil && (st == nil || st.ContainerID != ru.containerID || st.Status != service.StatusRunning) {
		return "the sandbox stopped"
	}
	if msg := strings.TrimSpace(ru.sess.Stderr()); msg != "" {
		return "the recorder ended: " + tail(msg, 300)
	}
	return "the recorder ended (its longest is " + r.cfg.MaxDuration.String() + ")"
}

// Stop ends a recording and returns its facts once its file is complete;
// a recording that ended already returns them as they are.
func (r *Recorder) Stop(ctx context.Context, id string) (Info, error) {
	r.mu.Lock()
	ru, ok := r.active[id]
	r.mu.Unlock()
	if !ok {
		return r.find(id)
	}
	return ru.stop(ctx, "")
}

// stop asks the recorder to end (its stdin closes, ffmpeg ends the file)
// and waits; past stopWait it cuts the stream.
func (ru *run) stop(ctx context.Context, reason string) (Info, error) {
	ru.mu.Lock()
	if ru.reason == "" && !ru.stopped {
		ru.stopped, ru.reason = true, reason
	}
	ru.mu.Unlock()
	if cw, ok := ru.sess.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	} else {
		ru.sess.Close()
	}
	timer := time.NewTimer(stopWait)
	defer timer.Stop()
	select {
	case <-ru.done:
	case <-timer.C:
		ru.sess.Close()
		<-ru.done
	case <-ctx.Done():
		return Info{}, ctx.Err()
	}
	ru.mu.Lock()
	defer ru.mu.Unlock()
	return ru.info, nil
}

// Close stops every recording of this process cleanly (the sidecar
// exits) and waits for their files; a later Start is ErrClosed.
func (r *Recorder) Close() {
	r.mu.Lock()
	r.closed = true
	runs := make([]*run, 0, len(r.active))
	for _, ru := range r.active {
		runs = append(runs, ru)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, ru := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = ru.stop(context.Background(), "the sidecar exited")
		}()
	}
	wg.Wait()
}

// sizeOf says a size bound the way config.json's recordingMaxBytes is
// usually given.
func sizeOf(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
