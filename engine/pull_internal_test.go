package engine

import (
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/images"
)

// The engine's pull stream as it sends it: per-layer progress, and a
// failure that comes inside the stream after a 200.
func TestReadPullStream(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		last         images.PullProgress
		err          string
	}{
		{"two layers", `{"status":"Pulling from team/pilot-sandbox","id":"1.4"}
{"status":"Pulling fs layer","progressDetail":{},"id":"a"}
{"status":"Already exists","progressDetail":{},"id":"b"}
{"status":"Downloading","progressDetail":{"current":100,"total":300},"id":"a"}
{"status":"Downloading","progressDetail":{"current":300,"total":300},"id":"a"}
{"status":"Download complete","progressDetail":{},"id":"a"}
{"status":"Status: Downloaded newer image for team/pilot-sandbox:1.4"}
`, images.PullProgress{Status: "Status: Downloaded newer image for team/pilot-sandbox:1.4", Current: 300, Total: 300}, ""},
		{"a registry that sends no length", `{"status":"Downloading","progressDetail":{"current":500},"id":"a"}
{"status":"Download complete","progressDetail":{},"id":"a"}
`, images.PullProgress{Status: "Download complete", Current: 500, Total: 500}, ""},
		{"a failure in the stream", `{"status":"Pulling fs layer","progressDetail":{},"id":"a"}
{"errorDetail":{"message":"unauthorized"},"error":"unauthorized: authentication required"}
`, images.PullProgress{Status: "Pulling fs layer"}, "unauthorized: authentication required"},
		{"a broken stream", `{"status":"Downloading","progressDetail":{"current":5,"total":9},"id":"a"}
{"status`, images.PullProgress{Status: "Downloading", Current: 5, Total: 9}, "unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var last images.PullProgress
			err := decodeStream(strings.NewReader(tc.stream), pullLayers(func(p images.PullProgress) { last = p }))
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("err = %v, want %q", err, tc.err)
			}
			if last != tc.last {
				t.Errorf("last progress %+v, want %+v", last, tc.last)
			}
		})
	}
}
