package engine

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
)

// PauseContainer freezes every process of a running container (docker
// pause). go-dockerclient's call takes no context, so it goes through send.
func (e *Client) PauseContainer(ctx context.Context, id string) error {
	return e.post(ctx, "/containers/"+url.PathEscape(id)+"/pause")
}

// UnpauseContainer thaws a paused container (docker unpause).
func (e *Client) UnpauseContainer(ctx context.Context, id string) error {
	return e.post(ctx, "/containers/"+url.PathEscape(id)+"/unpause")
}

func (e *Client) post(ctx context.Context, path string) error {
	api, err := e.connect(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := e.send(ctx, api, http.MethodPost, path, nil, nil)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// maxStats bounds the stats answer read: about 5 KiB for a sandbox.
const maxStats = 1 << 20

// MemoryUsage is what the container's processes hold now, counted as
// docker stats counts it: the cgroup's usage less the page cache that is
// inactive (inactive_file on cgroup v2, total_inactive_file on v1), which
// the kernel can take back. one-shot (API 1.41) answers at once instead
// of waiting a second for a second sample of the CPU.
func (e *Client) MemoryUsage(ctx context.Context, id string) (int64, error) {
	api, err := e.connect(ctx)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := e.send(ctx, api, http.MethodGet, "/containers/"+url.PathEscape(id)+"/stats",
		url.Values{"stream": {"false"}, "one-shot": {"true"}}, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var stats struct {
		MemoryStats struct {
			Usage int64            `json:"usage"`
			Stats map[string]int64 `json:"stats"`
		} `json:"memory_stats"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxStats)).Decode(&stats); err != nil {
		return 0, err
	}
	m := stats.MemoryStats
	cache, ok := m.Stats["inactive_file"]
	if !ok {
		cache = m.Stats["total_inactive_file"]
	}
	if cache < m.Usage {
		return m.Usage - cache, nil
	}
	return m.Usage, nil
}
