package engine

import (
	"context"
	"net/http"
	"net/url"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Capacity reports the engine's CPUs and memory (on Docker Desktop, those
// of its virtual machine).
func (e *Client) Capacity(ctx context.Context) (service.Capacity, error) {
	api, err := e.connectShort(ctx)
	if err != nil {
		return service.Capacity{}, err
	}
	info, err := api.Info()
	if err != nil {
		return service.Capacity{}, e.classify(err)
	}
	return service.Capacity{CPUs: info.NCPU, MemoryBytes: info.MemTotal}, nil
}

// UpdateLimits changes a container's memory (swap included), CPU and
// process limits. go-dockerclient's UpdateContainerOptions has no NanoCpus
// or PidsLimit, so the request goes through send.
func (e *Client) UpdateLimits(ctx context.Context, id string, l service.Limits) error {
	api, err := e.connect(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := e.send(ctx, api, http.MethodPost, "/containers/"+url.PathEscape(id)+"/update", nil, map[string]int64{
		"Memory":     l.MemoryBytes,
		"MemorySwap": l.MemoryBytes, // no swap beyond the memory limit
		"NanoCpus":   l.NanoCPUs,
		"PidsLimit":  l.PidsLimit,
	})
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
