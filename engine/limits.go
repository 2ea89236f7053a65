package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Capacity reports the engine's CPUs and memory (on Docker Desktop, those
// of its virtual machine).
func (e *Client) Capacity(ctx context.Context) (service.Capacity, error) {
	api, err := e.connect(ctx)
	if err != nil {
		return service.Capacity{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var info struct {
		NCPU     int
		MemTotal int64
	}
	if err := e.getJSON(ctx, api, "/info", &info); err != nil {
		return service.Capacity{}, err
	}
	return service.Capacity{CPUs: info.NCPU, MemoryBytes: info.MemTotal}, nil
}

// UpdateLimits changes a container's memory (swap included), CPU and
// process limits. go-dockerclient's UpdateContainerOptions has no NanoCpus
// or PidsLimit, so the request is made here.
func (e *Client) UpdateLimits(ctx context.Context, id string, l service.Limits) error {
	api, err := e.connect(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	body, _ := json.Marshal(map[string]int64{
		"Memory":     l.MemoryBytes,
		"MemorySwap": l.MemoryBytes, // no swap beyond the memory limit
		"NanoCpus":   l.NanoCPUs,
		"PidsLimit":  l.PidsLimit,
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		e.apiURL(api, "/containers/"+url.PathEscape(id)+"/update"), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return e.do(api, req, nil)
}

// getJSON decodes the answer to a GET of an API path into v.
func (e *Client) getJSON(ctx context.Context, api *docker.Client, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.apiURL(api, path), nil)
	if err != nil {
		return err
	}
	return e.do(api, req, v)
}

// do sends a request the library has no call for, decoding a 2xx answer
// into v (if not nil) and turning any other into the library's *docker.Error,
// so that classify maps it like the rest.
func (e *Client) do(api *docker.Client, req *http.Request, v any) error {
	resp, err := api.HTTPClient.Do(req)
	if err != nil {
		return e.classify(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return e.classify(err)
	}
	if resp.StatusCode/100 != 2 {
		var msg struct{ Message string }
		if json.Unmarshal(data, &msg) != nil || msg.Message == "" {
			msg.Message = strings.TrimSpace(string(data))
		}
		return e.classify(&docker.Error{Status: resp.StatusCode, Message: msg.Message})
	}
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("docker %s: %w", req.URL.Path, err)
	}
	return nil
}
