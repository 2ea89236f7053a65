package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// BuildImage builds an image and reports its output line by line. The engine
// answers 200 and reports a failed build inside the JSON stream, and the
// library returns nil for it, so the stream's error lines are what decide.
func (e *Client) BuildImage(ctx context.Context, spec service.BuildSpec) error {
	api, err := e.connect(ctx)
	if err != nil {
		return err
	}
	var args []docker.BuildArg
	for k, v := range spec.BuildArgs {
		args = append(args, docker.BuildArg{Name: k, Value: v})
	}
	pr, pw := io.Pipe()
	parsed := make(chan error, 1)
	go func() { parsed <- readBuildStream(pr, spec.Output) }()

	err = api.BuildImage(docker.BuildImageOptions{
		Context:             ctx,
		Name:                spec.Tag,
		Dockerfile:          spec.Dockerfile,
		InputStream:         spec.Context,
		OutputStream:        pw,
		RawJSONStream:       true,
		Labels:              spec.Labels,
		BuildArgs:           args,
		NoCache:             spec.NoCache,
		RmTmpContainer:      true,
		ForceRmTmpContainer: true,
	})
	pw.CloseWithError(err)
	streamErr := <-parsed
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

// readBuildStream passes each line of output to out and returns the build's
// error, if the stream reported one. It reads to the end so the writer never
// blocks.
func readBuildStream(r io.Reader, out func(string)) error {
	var buildErr error
	dec := json.NewDecoder(bufio.NewReader(r))
	for {
		var msg buildMessage
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return buildErr
			}
			io.Copy(io.Discard, r)
			if buildErr != nil {
				return buildErr
			}
			return err
		}
		text := msg.Stream + msg.Status
		if msg.Error != "" {
			text = msg.Error
			buildErr = errors.New(strings.TrimSpace(msg.Error))
		}
		if out == nil {
			continue
		}
		for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			if strings.TrimSpace(line) != "" {
				out(line)
			}
		}
	}
}
