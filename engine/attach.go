package engine

import (
	"context"
	"errors"
	"io"
	"sync"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// attachStderrMax is how much of an attached command's stderr is kept.
const attachStderrMax = 64 << 10

// ExecAttach starts a long-lived command with its stdin and stdout attached,
// for a request/response conversation with a process in the container.
func (e *Client) ExecAttach(ctx context.Context, id string, spec service.ExecSpec) (service.ExecSession, error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{stdin: inW, stdout: outR, stderr: &cappedBuffer{max: attachStderrMax}}
	execID, stream, err := e.startExec(ctx, id, spec, docker.StartExecOptions{
		InputStream:  inR,
		OutputStream: outW,
		ErrorStream:  s.stderr,
	})
	if err != nil {
		return nil, err
	}
	s.stream = stream
	go func() {
		s.pipe(inR, outW, e)
		e.gates.ended(id, execID)
	}()
	return s, nil
}

// pipe ends the session's pipes when its stream ends: when the command
// exits or the session is closed, or, over ssh, when the link dropped
// (then reads end with an ErrDockerUnavailable error: the command may run
// on, and its caller may start another once the engine answers).
func (s *session) pipe(inR *io.PipeReader, outW *io.PipeWriter, e *Client) {
	err := s.stream.Wait()
	switch {
	case err == nil:
		err = io.EOF
	case errors.Is(err, errDropped):
		err = e.unavailable(err)
	}
	outW.CloseWithError(err)
	inR.Close()
}

// session is an attached exec.
type session struct {
	stdin  *io.PipeWriter
	stdout *io.PipeReader
	stderr *cappedBuffer
	stream docker.CloseWaiter
	once   sync.Once
}

func (s *session) Read(p []byte) (int, error)  { return s.stdout.Read(p) }
func (s *session) Write(p []byte) (int, error) { return s.stdin.Write(p) }

// CloseWrite closes the command's stdin and leaves its output open: the
// command reads the end of its input (go-dockerclient half-closes the
// connection once the input ends).
func (s *session) CloseWrite() error { return s.stdin.Close() }

func (s *session) Close() error {
	s.once.Do(func() {
		s.stdin.Close()
		s.stream.Close()
		s.stdout.Close()
	})
	return nil
}

func (s *session) Stderr() string { return s.stderr.String() }
