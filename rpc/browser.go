package rpc

import "context"

// Browser is what sandbox/browser needs: the ws:// address of the
// sandbox's Chromium DevTools Protocol on the host (Chromium starts if it
// is not running).
type Browser interface {
	Browser(ctx context.Context, project string) (string, error)
}

// browserResult is sandbox/browser's answer.
type browserResult struct {
	WSEndpoint string `json:"wsEndpoint"`
}

func (s *Server) browser(ctx context.Context, _ *session, p projectParams) (browserResult, error) {
	ws, err := s.svc.Browser.Browser(ctx, string(p.ProjectPath))
	return browserResult{WSEndpoint: ws}, err
}
