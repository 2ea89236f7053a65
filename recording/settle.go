package recording

import (
	"context"
	"io"
	"os"
	"time"
)

// A recording whose facts say "recording" while no recorder of it runs was
// left by a sidecar that ended without finishing it (killed): settle
// finishes it the way finish would have, from the file as it is (the
// frames in it give its length, written over the Duration placeholder),
// the first time a list comes across it. A recording another process of
// the user's records has its recorder running, and is left alone.

// settleLook bounds the look for a recording's recorder.
const settleLook = 10 * time.Second

// whyUnfinished is the reason a settled recording gives.
const whyUnfinished = "the sidecar that recorded it ended before it finished the file"

// settle returns info finished if its recorder is gone, or as it is.
func (r *Recorder) settle(info Info) Info {
	ctx, cancel := context.WithTimeout(context.Background(), settleLook)
	defer cancel()
	list, err := r.docker.ListContainers(ctx, map[string]string{LabelRecorder: r.cfg.Scope, LabelRecording: info.ID})
	if err != nil || len(list) > 0 {
		return info // still recorded elsewhere, or unknown: as it is
	}
	f, err := os.OpenFile(info.Path, os.O_RDWR, 0)
	if err != nil {
		return info
	}
	defer f.Close()
	scan := newScanner()
	bytes, err := io.Copy(scan, f)
	if err != nil {
		return info
	}
	fi, _ := f.Stat()
	ms := scan.durationMs(info.FPS)
	if scan.writeDuration(f, ms) != nil || f.Sync() != nil {
		return info
	}
	info.State, info.Reason = StateEnded, whyUnfinished
	info.DurationMs, info.Bytes = ms, bytes
	if fi != nil {
		info.EndedAt = fi.ModTime().UnixMilli()
	}
	if err := writeInfo(info); err != nil {
		r.cfg.Logger.Warn().Err(err).Str("recording", info.ID).Msg("could not write a settled recording's facts")
	}
	return info
}
