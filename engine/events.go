package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Events streams the engine's lifecycle events for containers with the labels.
//
// It reads GET /events itself over the library's HTTP client rather than use
// the library's event monitor, which delivers events from separate goroutines
// (out of order), drops them when a listener is slow and cannot be cancelled
// with a context.
func (e *Client) Events(ctx context.Context, labels map[string]string) (<-chan service.ContainerEvent, error) {
	api, err := e.connect(ctx)
	if err != nil {
		return nil, err
	}
	var labelFilter []string
	for k, v := range labels {
		labelFilter = append(labelFilter, k+"="+v)
	}
	filters, _ := json.Marshal(map[string][]string{
		"type":  {"container"},
		"label": labelFilter,
		// Lifecycle only: every exec (each agent tool call) makes three
		// more events that say nothing about the container's state.
		"event": {"create", "start", "restart", "die", "stop", "kill", "oom", "pause", "unpause", "destroy", "rename"},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		e.apiURL(api, "/events?filters="+url.QueryEscape(string(filters))), nil)
	if err != nil {
		return nil, err
	}
	resp, err := api.HTTPClient.Do(req)
	if err != nil {
		return nil, e.classify(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("docker events: %s", resp.Status)
	}
	out := make(chan service.ContainerEvent, 64)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		dec := json.NewDecoder(resp.Body)
		for {
			var ev struct {
				Action   string `json:"Action"`
				TimeNano int64  `json:"timeNano"`
				Actor    struct {
					ID         string            `json:"ID"`
					Attributes map[string]string `json:"Attributes"`
				} `json:"Actor"`
			}
			if err := dec.Decode(&ev); err != nil {
				return // the stream ended or ctx was cancelled
			}
			select {
			case out <- service.ContainerEvent{
				ContainerID: ev.Actor.ID,
				Action:      ev.Action,
				Labels:      ev.Actor.Attributes,
				Time:        time.Unix(0, ev.TimeNano),
			}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// apiURL is the address of an API path on this client's endpoint, in the
// form the library's HTTP client dials.
func (e *Client) apiURL(api *docker.Client, path string) string {
	base := "http://unix.sock" // the host is ignored: the transport dials the socket
	if u, err := url.Parse(api.Endpoint()); err == nil && (u.Scheme == "tcp" || u.Scheme == "http" || u.Scheme == "https") {
		scheme := "http"
		if api.TLSConfig != nil {
			scheme = "https"
		}
		base = scheme + "://" + u.Host
	}
	if e.apiVersion != "" {
		return base + "/v" + e.apiVersion + path
	}
	return base + path
}
