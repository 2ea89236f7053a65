package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/adrg/xdg"
	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/engine"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/recording"
	"github.com/pilot-sandbox/pilot-sandbox/resources"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tasks"
)

// stateDir is the sidecar's directory under the XDG state home: the project
// registry and the log file.
func stateDir() string {
	return filepath.Join(xdg.StateHome, "pilot-sandbox")
}

// Environment variables that change how sandboxes are made.
const (
	// envImage is the sandbox image's tag (default pilot-sandbox:latest).
	envImage = "PILOT_IMAGE"
	// envDefaultImage is the image variant of projects that name none:
	// "browser" (the default) or "desktop". scripts/test.sh sets desktop,
	// so tests that do not test the browser run the small image.
	envDefaultImage = "PILOT_DEFAULT_IMAGE"
	// envBaseImage overrides the Dockerfile's BASE_IMAGE build argument.
	envBaseImage = "PILOT_BASE_IMAGE"
	// envScope sets the pilot.sandbox label value of the sandboxes this
	// process makes and sees (default "true"): the tests set their own, so
	// they never touch a user's real sandboxes or projects.
	envScope = "PILOT_SCOPE"
	// envTestPolicy, set to 1, lets config.json's idleStop be as short as
	// a second and makes the policy look every second, for tests.
	envTestPolicy = "PILOT_TEST_POLICY"
)

// policyConfig is where the user's lifecycle policy comes from:
// pilot-sandbox/config.json under the XDG config directory.
func policyConfig() service.PolicyConfig {
	cfg := service.PolicyConfig{File: projectfs.UserConfigFile(xdg.ConfigHome)}
	if os.Getenv(envTestPolicy) == "1" {
		cfg.MinIdleStop, cfg.Interval = time.Second, time.Second
	}
	return cfg
}

// app is what a command works with: its logger, the manager on the
// engine, the relay that carries the desktops of the manager's sandboxes
// without a network, and the network policy's questions and log; close
// closes them and the log file.
type app struct {
	log      zerolog.Logger
	m        *service.Manager
	docker   *engine.Client
	desktops *ports.DesktopRelay
	net      *network
	egress   *enforcement
	tasks    *tasks.Manager
	recorder *recording.Recorder
	models   *modelGateway
	timeline *timeline
	close    func()
}

// openApp opens the log (at level on stderr) and builds the manager.
func openApp(stderr io.Writer, level zerolog.Level) (*app, error) {
	log, closeLog, err := openLog(stderr, level)
	if err != nil {
		return nil, err
	}
	docker := engine.New("")
	// A sandbox without a network, and every one on a remote engine, has
	// its desktop carried by this process, for as long as it runs: its
	// carrier closes it as the sandbox stops (sidecar.go).
	desktops := ports.NewDesktopRelay(docker, log)
	enf := newEnforcement(docker, log)
	m, err := newManager(log, docker, desktops, enf)
	if err != nil {
		closeLog()
		return nil, err
	}
	net := newNetwork(m, stateDir())
	enf.judge.Store(net.judge)
	enf.log.Store(net.netLog)
	events, unsubscribe := m.Subscribe()
	go net.followStops(events) // ends with unsubscribe
	models := newModelGateway(m, docker, log)
	tasks := newTasks(m, models, log)
	recorder := newRecorder(m, docker, log)
	stopRecordingTasks := recordTasks(m, tasks, recorder, log)
	tl := openTimeline(stateDir(), m, net.broker, tasks)
	models.inside.rec, models.inside.gate = taskOrigin{tl.Recorder}, tl.control
	// The process's proxies end with it: another process takes each
	// sandbox over, or it has no way out (docs/network.md). The tasks go
	// on in their sandboxes: closing stops following them.
	closeAll := func() {
		stopRecordingTasks()
		recorder.Close() // each recording's file ends cleanly (docs/recording.md)
		tl.close()
		tasks.Close()
		models.close()
		unsubscribe()
		enf.Close()
		net.close()
		closeLog()
	}
	return &app{log: log, m: m, docker: docker, desktops: desktops, net: net, egress: enf, tasks: tasks, recorder: recorder, models: models, timeline: tl, close: closeAll}, nil
}

// newManager builds the manager the way every command uses it, its
// sandboxes' network enforced by network.
func newManager(log zerolog.Logger, docker *engine.Client, desktops service.DesktopPorts, network service.Network) (*service.Manager, error) {
	cfg := service.Config{
		Image:     os.Getenv(envImage),
		Resources: resources.SandboxImage(),
		Agent:     resources.DesktopAgent(),
		// The browser image's tag follows PILOT_IMAGE (BrowserTag).
		BrowserResources:  resources.BrowserImage(),
		DevResources:      resources.DevImage(),
		AgentsResources:   resources.AgentsImage(),
		RecorderResources: resources.RecorderImage(),
		Seccomp:           resources.ChromiumSeccomp(),
		DefaultVariant:    os.Getenv(envDefaultImage),
		StateDir:          stateDir(),
		Scope:             os.Getenv(envScope),
		Owner:             service.DefaultOwner(),
		Remote:            docker.Remote(),
		Policy:            policyConfig(),
		Logger:            log,
		DesktopPorts:      desktops,
		Network:           network,
	}
	if base := os.Getenv(envBaseImage); base != "" {
		cfg.BuildArgs = map[string]string{"BASE_IMAGE": base}
	}
	if v := cfg.DefaultVariant; v != "" && v != images.VariantBrowser && v != images.VariantDesktop {
		return nil, fmt.Errorf("%s must be %q or %q; it is %q", envDefaultImage, images.VariantBrowser, images.VariantDesktop, v)
	}
	return service.New(docker, cfg)
}

// maxLogBytes is the size at which the log file is rotated, at start-up
// and while the process runs (one old copy is kept as pilot-sandbox.log.1).
const maxLogBytes = 10 << 20

// openLog returns a logger writing JSON lines to the log file under the
// state directory and, at consoleLevel and above, readable lines to stderr.
// It never writes to stdout, which belongs to the protocol.
func openLog(stderr io.Writer, consoleLevel zerolog.Level) (zerolog.Logger, func(), error) {
	dir := stateDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return zerolog.Nop(), func() {}, fmt.Errorf("create state directory: %w", err)
	}
	file, err := openLogFile(filepath.Join(dir, "pilot-sandbox.log"), maxLogBytes)
	if err != nil {
		return zerolog.Nop(), func() {}, fmt.Errorf("open log file: %w", err)
	}
	console := zerolog.ConsoleWriter{Out: stderr, NoColor: !isTerminal(stderr), TimeFormat: "15:04:05"}
	out := zerolog.MultiLevelWriter(
		levelWriter{file, zerolog.DebugLevel},
		levelWriter{console, consoleLevel},
	)
	log := zerolog.New(out).Level(zerolog.DebugLevel).With().Timestamp().Int("pid", os.Getpid()).Logger()
	return log, file.close, nil
}

// levelWriter passes on only events at or above its level.
type levelWriter struct {
	w     io.Writer
	level zerolog.Level
}

func (l levelWriter) Write(p []byte) (int, error) { return l.w.Write(p) }

func (l levelWriter) WriteLevel(level zerolog.Level, p []byte) (int, error) {
	if level < l.level {
		return len(p), nil
	}
	return l.w.Write(p)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
