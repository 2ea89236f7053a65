package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/engine"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

var filepathAbs = filepath.Abs

// runDoctor checks what a sandbox needs and says what to do about anything
// missing, and shows the lifecycle policy in force. It exits 1 when
// something must be fixed.
func runDoctor(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	a, err := openApp(e.stderr, zerolog.ErrorLevel)
	if err != nil {
		return err
	}
	defer a.close()
	w := e.stdout
	ok := checkDocker(ctx, w, a)
	ok = checkStateDir(w) && ok
	ok = checkPolicy(ctx, w, a) && ok
	if !ok {
		return exitError{code: 1}
	}
	return nil
}

// checkDocker says whether the engine answers and the image is built.
func checkDocker(ctx context.Context, w io.Writer, a *app) bool {
	m, docker := a.m, a.docker
	status := m.DockerStatus(ctx)
	if !status.Available {
		fmt.Fprintf(w, "FAIL Docker at %s (%s): %s\n", docker.Endpoint(), docker.Route(), status.Error)
		if !docker.Remote() {
			fmt.Fprintln(w, "     Start Docker Desktop, or install and start Docker Engine (on Debian/Ubuntu:")
			fmt.Fprintln(w, "     sudo apt-get install docker.io && sudo systemctl start docker), or point")
			fmt.Fprintln(w, "     DOCKER_HOST at a running engine.")
		}
		return false
	}
	fmt.Fprintf(w, "ok   Docker %s (API %s) at %s\n", status.Version, status.APIVersion, status.Endpoint)
	fmt.Fprintf(w, "     from %s\n", docker.Route())
	if docker.Remote() {
		fmt.Fprintln(w, "     on another machine: sandboxes publish no port there; serve and ui carry each")
		fmt.Fprintln(w, "     desktop, forward and exposed port over the engine's connection (docs/configuration.md)")
	} else {
		warnEngineAge(w, status.Version)
	}
	switch labels, err := docker.ImageLabels(ctx, m.Image()); {
	case errors.Is(err, service.ErrImageNotFound):
		fmt.Fprintf(w, "note the sandbox image %s is not built yet: the first start builds it (or run pilot-sandbox build)\n", m.Image())
	case err != nil:
		fmt.Fprintf(w, "FAIL could not inspect the image %s: %v\n", m.Image(), err)
		return false
	case labels[images.LabelHash] != m.ImageHash():
		fmt.Fprintf(w, "note the sandbox image %s is out of date: the next start rebuilds it (or run pilot-sandbox build)\n", m.Image())
	default:
		fmt.Fprintf(w, "ok   the sandbox image %s is built and up to date (%s)\n", m.Image(), m.ImageHash())
		showImageAge(w, a, labels)
	}
	return true
}

// showImageAge says how old the image is, and whether the next new sandbox
// rebuilds it for security updates (the policy's rebuildAfter).
func showImageAge(w io.Writer, a *app, labels map[string]string) {
	age, known := images.Age(labels, time.Now())
	policy, _, _ := a.m.Policy()
	switch after := policy.RebuildAfter; {
	case !known:
		fmt.Fprintln(w, "note the sandbox image's age is unknown (it has no build time): it is not rebuilt for security updates until it is rebuilt once")
	case after == 0:
		fmt.Fprintf(w, "note the sandbox image was built %s ago; rebuildAfter is 0, so it is never rebuilt for security updates\n", images.FormatAge(age))
	case age >= after:
		fmt.Fprintf(w, "note the sandbox image was built %s ago, more than rebuildAfter (%s): the next new sandbox rebuilds it\n     for security updates (or run pilot-sandbox build)\n", images.FormatAge(age), projectfs.FormatDuration(after))
	default:
		fmt.Fprintf(w, "ok   the sandbox image was built %s ago; it is rebuilt for security updates once %s old\n", images.FormatAge(age), projectfs.FormatDuration(after))
	}
}

// warnEngineAge warns, without failing doctor, when the engine lets the LAN
// reach ports published on 127.0.0.1 (engine.LoopbackLeaks).
func warnEngineAge(w io.Writer, version string) {
	leaks, known := engine.LoopbackLeaks(version)
	switch {
	case !known:
		fmt.Fprintf(w, "note cannot tell from the version %q whether this engine keeps ports published on\n", version)
		fmt.Fprintf(w, "     127.0.0.1 off the LAN (Docker Engine before %d does not: moby #41872)\n", engine.LoopbackSafeEngine)
	case leaks:
		fmt.Fprintf(w, "WARN Docker Engine %s is older than %d: on Linux, ports it publishes on 127.0.0.1 answer\n", version, engine.LoopbackSafeEngine)
		fmt.Fprintln(w, "     from other machines on the LAN too (moby #41872, fixed in Engine 28 by moby PR #49325),")
		fmt.Fprintln(w, "     so a sandbox's VNC and viewer ports are reachable from the LAN and only the VNC password")
		fmt.Fprintf(w, "     stands in the way. Upgrade Docker Engine to %d or later, or firewall the host.\n", engine.LoopbackSafeEngine)
	}
}

func checkStateDir(w io.Writer) bool {
	dir := stateDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fmt.Fprintf(w, "FAIL state directory %s: %v\n", dir, err)
		return false
	}
	fmt.Fprintf(w, "ok   state and log files in %s\n", dir)
	return true
}

// checkPolicy shows the lifecycle policy in force, the file it comes
// from and what is wrong with that file, and how the disk limit is kept.
func checkPolicy(ctx context.Context, w io.Writer, a *app) bool {
	cfg, file, err := a.m.Policy()
	var ue *projectfs.UserConfigError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(w, "FAIL the lifecycle policy in %s:\n", file)
		for _, p := range ue.Problems {
			fmt.Fprintf(w, "     %s\n", strings.TrimSpace(p.Key+" "+p.Reason))
		}
		fmt.Fprintf(w, "     Until it is fixed, the keys at fault keep their defaults and no sandbox is\n")
		fmt.Fprintf(w, "     stopped for idleness or disk use. Read as: %s\n", cfg)
	case !fileExists(file):
		fmt.Fprintf(w, "ok   the lifecycle policy is the default (%s does not exist): %s\n", file, cfg)
	default:
		fmt.Fprintf(w, "ok   the lifecycle policy from %s: %s\n", file, cfg)
	}
	if cfg.DiskBytes > 0 {
		if bounded, why := a.docker.DiskLimitSupport(ctx); bounded {
			fmt.Fprintf(w, "ok   disk: the engine bounds each new sandbox's files (%s); the sidecar measures them too\n", why)
		} else {
			fmt.Fprintf(w, "note disk: the sidecar measures each running sandbox's files (a slow layer at least once a minute)\n"+
				"     and stops it past the limit, or near it when they cannot be measured in time, as the engine\n"+
				"     cannot bound them (%s)\n", why)
		}
	}
	return err == nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
