package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

var filepathAbs = filepath.Abs

// runDoctor checks what a sandbox needs and says what to do about anything
// missing. It exits 1 when something must be fixed.
func runDoctor(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	a, err := openApp(e.stderr, zerolog.ErrorLevel)
	if err != nil {
		return err
	}
	defer a.close()
	m, docker := a.m, a.docker
	w := e.stdout
	ok := true
	status := m.DockerStatus(ctx)
	if status.Available {
		fmt.Fprintf(w, "ok   Docker %s (API %s) at %s\n", status.Version, status.APIVersion, status.Endpoint)
	} else {
		ok = false
		fmt.Fprintf(w, "FAIL Docker at %s: %s\n", docker.Endpoint(), status.Error)
		fmt.Fprintln(w, "     Start Docker Desktop, or install and start Docker Engine (on Debian/Ubuntu:")
		fmt.Fprintln(w, "     sudo apt-get install docker.io && sudo systemctl start docker), or point")
		fmt.Fprintln(w, "     DOCKER_HOST at a running engine.")
	}
	if status.Available {
		switch labels, err := docker.ImageLabels(ctx, m.Image()); {
		case errors.Is(err, service.ErrImageNotFound):
			fmt.Fprintf(w, "note the sandbox image %s is not built yet: the first start builds it (or run pilot-sandbox build)\n", m.Image())
		case err != nil:
			ok = false
			fmt.Fprintf(w, "FAIL could not inspect the image %s: %v\n", m.Image(), err)
		case labels[service.LabelImageHash] != m.ImageHash():
			fmt.Fprintf(w, "note the sandbox image %s is out of date: the next start rebuilds it (or run pilot-sandbox build)\n", m.Image())
		default:
			fmt.Fprintf(w, "ok   the sandbox image %s is built and up to date (%s)\n", m.Image(), m.ImageHash())
		}
	}
	dir := stateDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		ok = false
		fmt.Fprintf(w, "FAIL state directory %s: %v\n", dir, err)
	} else {
		fmt.Fprintf(w, "ok   state and log files in %s\n", dir)
	}
	if !ok {
		return exitError{code: 1}
	}
	return nil
}
