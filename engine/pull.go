package engine

import (
	"context"
	"errors"
	"io"
	"strings"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/pilot-sandbox/pilot-sandbox/images"
)

// PullImage pulls an image from its registry with the engine's own
// credentials (docker login), reporting the bytes of its layers as they
// come. Like a build, a pull can fail inside its JSON stream after a 200.
func (e *Client) PullImage(ctx context.Context, ref string, progress func(images.PullProgress)) error {
	api, err := e.connect(ctx)
	if err != nil {
		return err
	}
	repo, tag := docker.ParseRepositoryTag(ref)
	err, streamErr := withJSONStream(func(out io.Writer) error {
		return api.PullImage(docker.PullImageOptions{
			Context:       ctx,
			Repository:    repo,
			Tag:           tag,
			OutputStream:  out,
			RawJSONStream: true,
		}, docker.AuthConfiguration{})
	}, pullLayers(progress))
	if err != nil {
		return e.classify(err)
	}
	return streamErr
}

// pullMessage is one object of the engine's pull output stream.
type pullMessage struct {
	ID             string `json:"id"`
	Status         string `json:"status"`
	Error          string `json:"error"`
	ProgressDetail struct {
		Current int64 `json:"current"`
		Total   int64 `json:"total"`
	} `json:"progressDetail"`
}

// pullLayers reports the layers' download in bytes to progress (the sum
// over the layers seen so far) and returns the error a message reports.
func pullLayers(progress func(images.PullProgress)) func(pullMessage) error {
	layers := map[string][2]int64{} // id: downloaded, size
	return func(msg pullMessage) error {
		if msg.Error != "" {
			return errors.New(strings.TrimSpace(msg.Error))
		}
		if msg.Status == "Downloading" && msg.ID != "" {
			layers[msg.ID] = [2]int64{msg.ProgressDetail.Current, msg.ProgressDetail.Total}
		} else if msg.Status == "Download complete" || msg.Status == "Already exists" {
			l := layers[msg.ID]
			size := max(l[0], l[1]) // a registry that sends no length leaves the total 0
			layers[msg.ID] = [2]int64{size, size}
		}
		if progress != nil {
			p := images.PullProgress{Status: strings.TrimSpace(msg.Status)}
			for _, l := range layers {
				p.Current += l[0]
				p.Total += l[1]
			}
			progress(p)
		}
		return nil
	}
}
