package engine

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// lifecycleActions are the container events Events asks for: every exec
// (each agent tool call) makes three more that say nothing about the
// container's state.
var lifecycleActions = []string{"create", "start", "restart", "die", "stop", "kill", "oom", "pause", "unpause", "destroy", "rename"}

// Events streams the engine's lifecycle events for containers with the labels.
//
// It reads GET /events itself (through send) rather than use
// go-dockerclient's AddEventListener, which delivers events from separate
// goroutines (out of order), drops them when a listener's channel is full,
// closes the channel when the connection drops and cannot be cancelled with
// a context. What this stream guarantees instead: events arrive in the
// engine's order and none is dropped while the connection lasts (a slow
// reader slows the stream down rather than losing events); the channel is
// closed when ctx ends or the connection breaks, and only then may events
// have been missed, so a closed channel calls for a resync.
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
		"event": lifecycleActions,
	})
	resp, err := e.send(ctx, api, http.MethodGet, "/events", url.Values{"filters": {string(filters)}}, nil)
	if err != nil {
		return nil, err
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
