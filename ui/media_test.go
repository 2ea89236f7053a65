package ui

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

type nopSeekCloser struct{ *bytes.Reader }

func (nopSeekCloser) Close() error { return nil }

func TestRecordingsNeedTheTokenAndTheirProject(t *testing.T) {
	video := []byte("0123456789")
	h, err := Handler(Options{Project: "/p", Port: 7000, RPC: http.NotFoundHandler(), Token: "secret",
		Recording: func(id string) (io.ReadSeekCloser, time.Time, error) {
			if id != "mine" {
				return nil, time.Time{}, errors.New("not this project's")
			}
			return nopSeekCloser{bytes.NewReader(video)}, time.Time{}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		url, rangeHeader string
		status           int
		body             string
	}{
		{"/recordings/mine?token=secret", "", 200, "0123456789"},
		{"/recordings/mine?token=secret", "bytes=2-4", 206, "234"},
		{"/recordings/mine", "", 403, ""},
		{"/recordings/mine?token=guess", "", 403, ""},
		{"/recordings/theirs?token=secret", "", 404, ""},
		{"/recordings/..%2f..%2fetc%2fpasswd?token=secret", "", 404, ""},
	} {
		req := httptest.NewRequest("GET", "http://127.0.0.1:7000"+c.url, nil)
		if c.rangeHeader != "" {
			req.Header.Set("Range", c.rangeHeader)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.status || (c.body != "" && rec.Body.String() != c.body) {
			t.Errorf("%s (%s): %d %q; want %d %q", c.url, c.rangeHeader, rec.Code, rec.Body.String(), c.status, c.body)
		}
		if c.status < 300 && rec.Header().Get("Content-Type") != "video/webm" {
			t.Errorf("%s: Content-Type %q", c.url, rec.Header().Get("Content-Type"))
		}
	}
}
