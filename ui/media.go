package ui

import (
	"crypto/subtle"
	"io"
	"net/http"
	"time"
)

// Recording opens the video of one of the panel's project's recordings by
// its ID (package recording's Recorder.Open): it refuses an ID that is not
// one of that project's, so the route below reaches nothing else of the
// user's files.
type Recording func(id string) (video io.ReadSeekCloser, modified time.Time, err error)

// serveRecording serves GET /recordings/{id}?token=T to the panel's
// player: a <video> cannot send headers, so the token rides in the query,
// as it does for the WebSocket. Range requests are answered (seeking).
func serveRecording(token string, open Recording) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		got := r.URL.Query().Get("token")
		if token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			http.Error(w, "a recording needs the panel's token", http.StatusForbidden)
			return
		}
		video, modified, err := open(r.PathValue("id"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer video.Close()
		w.Header().Set("Content-Type", "video/webm")
		http.ServeContent(w, r, "", modified, video)
	}
}
