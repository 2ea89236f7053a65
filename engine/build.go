package engine

import (
	"context"
	"errors"
	"io"
	"strings"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/pilot-sandbox/pilot-sandbox/images"
)

// BuildImage builds an image and reports its output line by line. The engine
// answers 200 and reports a failed build inside the JSON stream, and the
// library returns nil for it, so the stream's error lines are what decide.
func (e *Client) BuildImage(ctx context.Context, spec images.BuildSpec) error {
	api, err := e.connect(ctx)
	if err != nil {
		return err
	}
	network := ""
	if spec.SandboxScope != "" {
		if network, err = e.ensureNetwork(ctx, spec.SandboxScope); err != nil {
			return err
		}
	}
	var args []docker.BuildArg
	for k, v := range spec.BuildArgs {
		args = append(args, docker.BuildArg{Name: k, Value: v})
	}
	err, streamErr := withJSONStream(func(out io.Writer) error {
		return api.BuildImage(docker.BuildImageOptions{
			Context:             ctx,
			Name:                spec.Tag,
			Dockerfile:          spec.Dockerfile,
			InputStream:         spec.Context,
			OutputStream:        out,
			RawJSONStream:       true,
			Labels:              spec.Labels,
			BuildArgs:           args,
			NoCache:             spec.NoCache,
			NetworkMode:         network,
			RmTmpContainer:      true,
			ForceRmTmpContainer: true,
		})
	}, buildLines(spec.Output))
	if err != nil {
		return e.classify(err)
	}
	return streamErr
}

// buildMessage is one object of the engine's build output stream.
type buildMessage struct {
	Stream      string `json:"stream"`
	Status      string `json:"status"`
	Error       string `json:"error"`
	ErrorDetail struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// buildLines passes each line of a build's output to out (if any) and
// returns the error a message reports.
func buildLines(out func(string)) func(buildMessage) error {
	return func(msg buildMessage) error {
		text := msg.Stream + msg.Status
		var err error
		if msg.Error != "" {
			text = msg.Error
			err = errors.New(strings.TrimSpace(msg.Error))
		}
		if out != nil {
			for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
				if strings.TrimSpace(line) != "" {
					out(line)
				}
			}
		}
		return err
	}
}
