// Package images makes sure the sandbox images exist and are current: the
// sidecar's desktop image and its browser variant, built from the embedded
// resources on a base image pinned by digest (or pulled, when the tag names
// a registry and the image there carries this binary's build hash); their
// age, past which they are rebuilt without the cache for security updates;
// and a project's own image, built from its Dockerfile on the browser
// image. It decides when an image is missing, out of date or old, and
// reports each step as progress. From a project's settings it plans which
// image the project's new container runs (Plan, plan.go), and says what a
// project's own image keeps of the browser image whatever its Dockerfile
// set (the labels the images' Dockerfiles set, their entrypoint).
//
// It knows nothing of sandboxes or containers: whether the user approved a
// project's Dockerfile, what a container is made with, and how a failure
// reaches a client are service's. It declares the part of the engine it
// uses (Engine), which the engine package implements.
package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Engine is the part of a Docker engine the images need.
type Engine interface {
	// ImageLabels returns the labels of an image, or ErrNotFound.
	ImageLabels(ctx context.Context, ref string) (map[string]string, error)
	// BuildImage builds an image from a tar build context, reporting each line
	// of the build's output to spec.Output as it arrives. It fails if the build
	// fails, whatever the engine's HTTP status said.
	BuildImage(ctx context.Context, spec BuildSpec) error
	// PullImage pulls an image from its registry, reporting the download
	// as it goes. It fails, like a build, when the stream reports a failure.
	PullImage(ctx context.Context, ref string, progress func(PullProgress)) error
	// RemoveImage removes an image tag (and the layers only it used), or
	// answers ErrNotFound; it refuses while a container uses the image.
	RemoveImage(ctx context.Context, ref string) error
	// ImageTags lists the tags of the images labelled label=value.
	ImageTags(ctx context.Context, label, value string) ([]string, error)
}

// BuildSpec is an image build.
type BuildSpec struct {
	Tag     string
	Context io.Reader // a tar archive with the Dockerfile at its root
	// Dockerfile is the Dockerfile's name in the context; "" is
	// "Dockerfile".
	Dockerfile string
	Labels     map[string]string
	BuildArgs  map[string]string
	// NoCache builds every step anew (a rebuild for security updates).
	NoCache bool
	// SandboxScope, for a project's own image, has the build's RUN steps
	// join the network of that scope's sandboxes, where the engine drops
	// traffic between containers, instead of its default bridge, where
	// they reach every container on it. "" is the engine's default.
	SandboxScope string
	Output       func(line string) // may be nil
}

// PullProgress is where a pull is: the engine's last status line, and the
// bytes of the layers seen so far, downloaded and in all.
type PullProgress struct {
	Status         string
	Current, Total int64
}

var (
	// ErrNotFound is returned by an Engine when the image does not exist.
	ErrNotFound = errors.New("image not found")
	// ErrNoBrowser: a browser image was asked of a sidecar that has none
	// to build.
	ErrNoBrowser = errors.New("the sandbox has no browser")
)

// BuildError is a build that failed, with the last lines of its output.
type BuildError struct {
	Log []string
	Err error
}

func (e *BuildError) Error() string { return e.Err.Error() }

func (e *BuildError) Unwrap() error { return e.Err }

// DefaultTag is the tag the sidecar builds its desktop image under.
const DefaultTag = "pilot-sandbox:latest"

// Image variants, the values of .pilot/settings.json's sandbox.image
// (docs/images.md).
const (
	// VariantBrowser is the desktop plus Chromium: the default.
	VariantBrowser = "browser"
	// VariantDesktop is the desktop without a browser.
	VariantDesktop = "desktop"
	// VariantDev is the browser image with tools to build and run a
	// project inside: git, curl, Node.js and npm, Python with pip and
	// venv, make and a C toolchain.
	VariantDev = "dev"
	// VariantProject is the image of a project that brings its own
	// Dockerfile (sandbox.image {"dockerfile": PATH}): built on the
	// browser image, once the user approved it.
	VariantProject = "dockerfile"
)

// Labels the sidecar sets on the images it builds.
const (
	// LabelHash is the build hash of the files an image was built from.
	LabelHash = "pilot.sandbox.hash"
	// LabelBuilt is the time the sidecar built an image (RFC 3339, UTC),
	// by its own clock. The engine's Created is not used: an image the
	// classic builder makes wholly from its cache keeps the Created of the
	// build that filled the cache, so a rebuild would not always make it
	// younger; and a label of the sidecar's own can be set from a test's
	// clock.
	LabelBuilt = "pilot.sandbox.built"
	// LabelContext, on a project's own image, is the digest of the build
	// context it was built from (what the user approved).
	LabelContext = "pilot.sandbox.context"
	// LabelAgents, on an agent CLIs' layer, lists the npm packages it
	// installed, pinned (agents.go).
	LabelAgents = "pilot.sandbox.agents"
	// LabelAgentsOn, on an agent CLIs' layer, is the image below's tag and
	// the packages: the layers that share it are the same CLIs on the same
	// image, the newest of which supersedes the others (agents.go).
	LabelAgentsOn = "pilot.sandbox.agents-on"
)

// BrowserTag is the browser image's tag for a desktop image tag:
// pilot-sandbox:latest -> pilot-sandbox-browser:latest, and a test's
// PILOT_IMAGE=pilot-sandbox:mine -> pilot-sandbox-browser:mine.
func BrowserTag(desktop string) string {
	repo, tag := splitTag(desktop)
	return repo + "-browser:" + tag
}

// DevTag is the dev image's tag for a desktop image tag:
// pilot-sandbox:latest -> pilot-sandbox-dev:latest.
func DevTag(desktop string) string {
	repo, tag := splitTag(desktop)
	return repo + "-dev:" + tag
}

// splitTag cuts a reference into its repository and tag ("latest" when it
// has none).
func splitTag(ref string) (repo, tag string) {
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i], ref[i+1:]
	}
	return ref, "latest"
}

// Config is what a Builder builds. Zero fields take the defaults.
type Config struct {
	// Tag is the desktop image's tag (DefaultTag).
	Tag string
	// Resources is the desktop image's build context (the embedded
	// resources); required.
	Resources fs.FS
	// BrowserTag is the browser image's tag (BrowserTag(Tag)).
	BrowserTag string
	// BrowserResources is the browser image's build context, a layer on
	// the desktop image; nil means there is no browser variant.
	BrowserResources fs.FS
	// DevTag is the dev image's tag (DevTag(Tag)).
	DevTag string
	// DevResources is the dev image's build context, a layer on the
	// browser image; nil means there is no dev variant.
	DevResources fs.FS
	// RecorderTag is the recorder image's tag (RecorderTag(Tag)).
	RecorderTag string
	// RecorderResources is the recorder image's build context, a layer on
	// the desktop image; nil means there is no recorder to build.
	RecorderResources fs.FS
	// AgentsResources is the agent CLIs' layer's build context (agents.go),
	// on any of the images; nil means there is none to build.
	AgentsResources fs.FS
	// BuildArgs are passed to the desktop image's build, e.g. BASE_IMAGE.
	BuildArgs map[string]string
	// Labels go on every image built, beside the images' own.
	Labels map[string]string
	// RebuildAfter is the age past which an image is rebuilt for security
	// updates (0: never), asked at each check; nil is never.
	RebuildAfter func() time.Duration
	// Logger receives the builds' logs.
	Logger zerolog.Logger
	// Now is the clock (time.Now).
	Now func() time.Time
}

// Builder makes sure of the sidecar's images and of projects' own. It is
// safe for concurrent use: one check or build runs at a time.
type Builder struct {
	engine  Engine
	cfg     Config
	log     zerolog.Logger
	desktop buildContext
	// browser is the browser image's context, hashed on the desktop's;
	// dev the dev image's, hashed on the browser's.
	browser, dev buildContext
	// recorder is the recorder image's context, hashed on the desktop's.
	recorder buildContext
	// agentPins are the agent CLIs' layer's pinned packages, by the ARG
	// that pins each (agents.go); nil when there is no layer to build.
	agentPins map[string]string

	mu sync.Mutex // serializes image checks and builds
}

// New reads the images' build contexts. It does not touch the engine.
func New(engine Engine, cfg Config) (*Builder, error) {
	if cfg.Resources == nil {
		return nil, errors.New("images: Config.Resources is required")
	}
	if cfg.Tag == "" {
		cfg.Tag = DefaultTag
	}
	if cfg.BrowserTag == "" {
		cfg.BrowserTag = BrowserTag(cfg.Tag)
	}
	if cfg.DevTag == "" {
		cfg.DevTag = DevTag(cfg.Tag)
	}
	if cfg.RecorderTag == "" {
		cfg.RecorderTag = RecorderTag(cfg.Tag)
	}
	if cfg.RebuildAfter == nil {
		cfg.RebuildAfter = func() time.Duration { return 0 }
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	desktop, err := newBuildContext(cfg.Resources, cfg.BuildArgs)
	if err != nil {
		return nil, fmt.Errorf("read image resources: %w", err)
	}
	b := &Builder{engine: engine, cfg: cfg, log: cfg.Logger, desktop: desktop}
	if cfg.BrowserResources != nil {
		browser, err := newBuildContext(cfg.BrowserResources, map[string]string{"DESKTOP": cfg.Tag})
		if err != nil {
			return nil, fmt.Errorf("read browser image resources: %w", err)
		}
		b.browser = browser.on(desktop.Hash)
	}
	if cfg.DevResources != nil && cfg.BrowserResources != nil {
		dev, err := newBuildContext(cfg.DevResources, map[string]string{"BROWSER": cfg.BrowserTag})
		if err != nil {
			return nil, fmt.Errorf("read dev image resources: %w", err)
		}
		b.dev = dev.on(b.browser.Hash)
	}
	if cfg.RecorderResources != nil {
		recorder, err := newBuildContext(cfg.RecorderResources, map[string]string{"DESKTOP": cfg.Tag})
		if err != nil {
			return nil, fmt.Errorf("read recorder image resources: %w", err)
		}
		b.recorder = recorder.on(desktop.Hash)
	}
	if cfg.AgentsResources != nil {
		if b.agentPins, err = readAgentPins(cfg.AgentsResources); err != nil {
			return nil, fmt.Errorf("read agent CLIs' layer resources: %w", err)
		}
	}
	return b, nil
}

// HasBrowser says whether there is a browser image to build.
func (b *Builder) HasBrowser() bool { return b.browser.Tar != nil }

// Tag is the image tag of a variant of the sidecar's images.
func (b *Builder) Tag(variant string) string { return b.top(variant).tag }

// Hash is the build hash the variant's image carries (LabelHash).
func (b *Builder) Hash(variant string) string { return b.top(variant).build.Hash }

// Report is told each step of a check or build: a message, and where a
// long one is (current of total, 0 when it cannot say).
type Report func(msg string, current, total int)

func (r Report) orNothing() Report {
	if r == nil {
		return func(string, int, int) {}
	}
	return r
}
