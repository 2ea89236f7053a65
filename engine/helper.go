package engine

import (
	"context"
	"fmt"
	"io"
	"time"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// RunAttached runs a helper container beside a sandbox (service.HelperSpec)
// and returns its stdin and stdout once it has started. It is attached
// before it starts, so nothing it writes is lost, and Docker removes it
// when it exits. Closing the session closes its stdin.
//
// Measured here through the API (docs/network.md): create, attach and
// start to the helper's first line 157-510 ms (median 256-294 ms under a
// load of 5), against 138-478 ms (median 227-345 ms) for starting a helper
// created once; the difference is within the noise, and a container made
// for each run cannot be attached twice by two processes.
func (e *Client) RunAttached(ctx context.Context, spec service.HelperSpec) (service.ExecSession, error) {
	api, err := e.connect(ctx)
	if err != nil {
		return nil, err
	}
	callCtx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	c, err := api.CreateContainer(docker.CreateContainerOptions{
		Config:     helperConfig(spec),
		HostConfig: helperHost(spec),
		Context:    callCtx,
	})
	if err != nil {
		return nil, fmt.Errorf("create helper: %w", e.classify(err))
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{stdin: inW, stdout: outR, stderr: &cappedBuffer{max: attachStderrMax}}
	attached := make(chan struct{})
	s.stream, err = api.AttachToContainerNonBlocking(docker.AttachToContainerOptions{
		Container:    c.ID,
		InputStream:  inR,
		OutputStream: outW,
		ErrorStream:  s.stderr,
		Stdin:        true,
		Stdout:       true,
		Stderr:       true,
		Stream:       true,
		Success:      attached,
	})
	if err == nil {
		err = waitAttached(callCtx, attached)
	}
	if err == nil {
		err = api.StartContainerWithContext(c.ID, nil, callCtx)
	}
	if err != nil {
		e.removeHelper(c.ID)
		if s.stream != nil {
			s.stream.Close()
		}
		return nil, fmt.Errorf("start helper: %w", e.classify(err))
	}
	go s.pipe(inR, outW, e)
	return s, nil
}

// waitAttached waits until the engine has answered the attach request (the
// library sends it from a goroutine), then lets the library go on.
func waitAttached(ctx context.Context, attached chan struct{}) error {
	select {
	case <-attached:
		attached <- struct{}{}
		return nil
	case <-ctx.Done():
		// The library would wait on the channel for ever: let it go on
		// into the stream, which the caller closes.
		go func() { <-attached; attached <- struct{}{} }()
		return ctx.Err()
	}
}

// removeHelper removes a helper that never ran (AutoRemove acts only on
// one that started).
func (e *Client) removeHelper(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = e.RemoveContainer(ctx, id)
}

func helperConfig(spec service.HelperSpec) *docker.Config {
	return &docker.Config{
		Image:      spec.Image,
		Labels:     spec.Labels,
		User:       spec.User,
		Entrypoint: spec.Cmd,
		// Its stdin stays open while the one attached client holds it,
		// and closes when that client goes.
		OpenStdin:    true,
		StdinOnce:    true,
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
	}
}

func helperHost(spec service.HelperSpec) *docker.HostConfig {
	return &docker.HostConfig{
		NetworkMode:    "container:" + spec.NetworkOf,
		AutoRemove:     true,
		CapDrop:        []string{"ALL"},
		CapAdd:         spec.CapAdd,
		SecurityOpt:    []string{"no-new-privileges"},
		ReadonlyRootfs: true,
		LogConfig:      docker.LogConfig{Type: "none"},
		Memory:         spec.Limits.MemoryBytes,
		MemorySwap:     spec.Limits.MemoryBytes,
		NanoCPUs:       spec.Limits.NanoCPUs,
		PidsLimit:      ptrIfPositive(spec.Limits.PidsLimit),
	}
}
