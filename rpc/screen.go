package rpc

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pilot-sandbox/pilot-sandbox/args"
	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

// Screen is what sandbox/screenshot needs: the sandbox's display, whole.
type Screen interface {
	Screenshot(ctx context.Context, project string) (desktop.Screenshot, error)
}

// Params and result of sandbox/screenshot.
type (
	screenshotParams struct {
		projectParams
		Format  string `json:"format,omitempty" jsonschema:"png, lossless, or jpeg, many times smaller for pictures and photos (not for text)."`
		Quality int    `json:"quality,omitzero" jsonschema:"The JPEG's quality, 1 to 100 (75 when left out); jpeg only."`
	}
	screenshotResult struct {
		MimeType string `json:"mimeType"`
		Data     []byte `json:"data"` // base64 in JSON, encoded once, into the reply
		Width    int    `json:"width"`
		Height   int    `json:"height"`
	}
)

// TuneSchema states the formats and the JPEG quality's bounds.
func (screenshotParams) TuneSchema(s *jsonschema.Schema) {
	s.Properties["format"].Enum = []any{desktop.FormatPNG, desktop.FormatJPEG}
	s.Properties["format"].Default = json.RawMessage(strconv.Quote(desktop.FormatPNG))
	q := s.Properties["quality"]
	q.Minimum, q.Maximum = jsonschema.Ptr(1.0), jsonschema.Ptr(100.0)
}

func (s *Server) screenshot(ctx context.Context, _ *session, p screenshotParams) (screenshotResult, error) {
	if p.Quality != 0 && p.Format != desktop.FormatJPEG {
		return screenshotResult{}, &args.Error{Field: "quality", Reason: `applies to JPEG only: add "format": "jpeg"`}
	}
	shot, err := s.svc.Screen.Screenshot(ctx, string(p.ProjectPath))
	if err != nil {
		return screenshotResult{}, err
	}
	data, mime, err := shot.Encode(p.Format, p.Quality)
	if err != nil {
		return screenshotResult{}, err
	}
	return screenshotResult{
		MimeType: mime,
		Data:     data,
		Width:    shot.Width,
		Height:   shot.Height,
	}, nil
}
