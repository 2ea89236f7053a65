package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// pauseDrain bounds how long a pause waits for the execs starting in the
// container (gate.go): an exec starts in milliseconds, and seconds under
// load.
const pauseDrain = 10 * time.Second

// PauseContainer freezes every process of a running container (docker
// pause), once no exec of this process is starting in it (gate.go). When
// one is still starting after pauseDrain it fails and pauses nothing.
// go-dockerclient's call takes no context, so it goes through send.
func (e *Client) PauseContainer(ctx context.Context, id string) error {
	api, err := e.connect(ctx)
	if err != nil {
		return err
	}
	drain, cancel := context.WithTimeout(ctx, pauseDrain)
	release, err := e.gates.hold(drain, id, func(ctx context.Context, execID string) (bool, error) {
		return e.execStarted(ctx, api, execID)
	})
	cancel()
	if err != nil {
		return fmt.Errorf("%w: not paused: %w", service.ErrTimeout, err)
	}
	defer release()
	return e.post(ctx, "/containers/"+url.PathEscape(id)+"/pause")
}

// execStarted says whether the engine has started an exec's process: it
// records the pid once runc's exec is done, or an exit code when the
// start failed. An exec that is gone has nothing left to start.
func (e *Client) execStarted(ctx context.Context, api *docker.Client, execID string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := e.send(ctx, api, http.MethodGet, "/exec/"+url.PathEscape(execID)+"/json", nil, nil)
	if errors.Is(err, service.ErrContainerNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	// ExitCode is null until the exec ends (go-dockerclient's ExecInspect
	// reads it as 0: not told from an exit 0, so it is read here).
	var info struct {
		Pid      int  `json:"Pid"`
		ExitCode *int `json:"ExitCode"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxExecInfo)).Decode(&info); err != nil {
		return false, fmt.Errorf("inspect exec: %w", err)
	}
	return info.Pid != 0 || info.ExitCode != nil, nil
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

// maxExecInfo bounds an exec's inspect answer read: under 2 KiB.
const maxExecInfo = 64 << 10

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
