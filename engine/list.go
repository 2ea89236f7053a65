package engine

import (
	"context"
	"time"

	docker "github.com/fsouza/go-dockerclient"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// ListContainers inspects every container, running or not, with the labels.
// The list endpoint lacks exit codes and OOM flags, so each one is inspected;
// a user has a handful of sandboxes at most.
func (e *Client) ListContainers(ctx context.Context, labels map[string]string) ([]service.Container, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	list, err := e.list(ctx, map[string][]string{"label": labelFilter(labels)}, true)
	if err != nil {
		return nil, err
	}
	out := make([]service.Container, 0, len(list))
	for _, item := range list {
		c, err := e.InspectContainer(ctx, item.ID)
		if err != nil {
			continue // removed between the list and the inspect
		}
		out = append(out, c)
	}
	return out, nil
}

// RunningIDs lists the IDs of the running containers with all of labels,
// from the engine's list alone: what a look at whether any runs needs,
// without ListContainers' inspect of each (a round trip apiece).
func (e *Client) RunningIDs(ctx context.Context, labels map[string]string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	list, err := e.list(ctx, map[string][]string{"label": labelFilter(labels), "status": {"running"}}, false)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(list))
	for _, item := range list {
		ids = append(ids, item.ID)
	}
	return ids, nil
}

// list is the engine's list of the containers the filters match (all, or
// only those running).
func (e *Client) list(ctx context.Context, filters map[string][]string, all bool) ([]docker.APIContainers, error) {
	api, err := e.connect(ctx)
	if err != nil {
		return nil, err
	}
	list, err := api.ListContainers(docker.ListContainersOptions{All: all, Filters: filters, Context: ctx})
	return list, e.classify(err)
}

// labelFilter is the engine's filter for containers with all of labels.
func labelFilter(labels map[string]string) []string {
	var filter []string
	for k, v := range labels {
		filter = append(filter, k+"="+v)
	}
	return filter
}

// IdleIDs lists the IDs of the containers with all of labels that are not
// running (created, exited or dead) and were created before before: the
// engine's list alone, its creation times in whole seconds.
func (e *Client) IdleIDs(ctx context.Context, labels map[string]string, before time.Time) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	list, err := e.list(ctx, map[string][]string{"label": labelFilter(labels), "status": {"created", "exited", "dead"}}, true)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, item := range list {
		if time.Unix(item.Created, 0).Before(before) {
			ids = append(ids, item.ID)
		}
	}
	return ids, nil
}
