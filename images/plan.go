package images

import (
	"context"
	"fmt"
	"strings"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// Which image a project's new container runs: a variant of the sidecar's
// images (sandbox.image "desktop", "browser" or "dev"), or its own image,
// built from its Dockerfile on the browser image (project.go). Whether the
// user approved that Dockerfile is the caller's to ask before it makes
// sure of the plan; what the container keeps of the browser image whatever
// the Dockerfile set is Pinned.
//
// Locks: EnsurePlan takes the Builder's mu, as Ensure and EnsureProject
// do (a check or a build, minutes long: step 2 of the lock order in
// service/manager.go); Plan, Pinned and ContextChanged take none.

// Plan is the image a project's new container runs. It is a plain value:
// decided from the project's settings (Builder.Plan), approved by the
// caller, then made sure of (Builder.EnsurePlan).
type Plan struct {
	// Variant is one of the Variant constants.
	Variant string
	// Tag is the image the container runs.
	Tag string
	// Project is the project's own image, with the build context read
	// from the project: VariantProject only.
	Project *Project
	// Agents is the agent CLIs' layer on the image (WithAgents), whose
	// Tag is then the layer's: nil for none.
	Agents *agentsLayer
}

// Labels the images' Dockerfiles set (resources/docker/sandbox/Dockerfile,
// resources/docker/browser/Dockerfile), which their containers inherit.
const (
	// LabelViewer is the path of the sandbox's own viewer page on the
	// noVNC port.
	LabelViewer = "pilot.sandbox.viewer"
	// LabelVNCDir names the directory the VNC password file goes into.
	// Images without it keep the file in the sandbox user's ~/.vnc.
	LabelVNCDir = "pilot.sandbox.vnc-dir"
	// LabelDesktopUser names the user the desktop runs as, when it is not
	// the sandbox user that every exec runs as (desktop.DesktopUser).
	// Containers of older images have none: their desktop, agent and execs
	// share desktop.User.
	LabelDesktopUser = "pilot.sandbox.desktop-user"
	// LabelBrowser marks an image with a browser: its value names it.
	LabelBrowser = "pilot.sandbox.browser"
)

// PinnedLabels are the browser image's labels a project's own image keeps
// whatever its Dockerfile set (Pinned): they say which user runs the
// desktop, where its VNC passwords go, which viewer page is the sidecar's,
// and that it has a browser.
var PinnedLabels = []string{LabelDesktopUser, LabelVNCDir, LabelViewer, LabelBrowser}

// Entrypoint is the desktop images' entrypoint, which a project's own
// image runs whatever its Dockerfile sets.
const Entrypoint = "/usr/local/bin/pilot-desktop"

// ProjectTag is the tag of a project's own image: one per project, on the
// desktop image's repository (pilot-sandbox:latest ->
// pilot-sandbox-project:NAME-HASH, from its sandbox container's name
// pilot-sandbox-NAME-HASH); an empty desktopImage is DefaultTag.
func ProjectTag(desktopImage, container string) string {
	if desktopImage == "" {
		desktopImage = DefaultTag
	}
	repo, _ := splitTag(desktopImage)
	return repo + "-project:" + strings.TrimPrefix(container, "pilot-sandbox-")
}

// Plan decides the image of the project's new container from its
// settings: the variant they name, or fallback when they name none, or,
// when they name a Dockerfile, the project's own image own (its Tag,
// Labels and Scope) with the build context read from the project.
func (b *Builder) Plan(project string, pc projectfs.Config, fallback string, own Project) (Plan, error) {
	df := pc.ImageDockerfile()
	if df == "" {
		variant := fallback
		if v := pc.ImageVariant(); v != "" {
			variant = v
		}
		return Plan{Variant: variant, Tag: b.Tag(variant)}, nil
	}
	if !b.HasBrowser() {
		return Plan{}, fmt.Errorf("%w: this sidecar has no browser image for a project Dockerfile to build on", ErrNoBrowser)
	}
	bc, err := projectfs.ReadBuildContext(project, df)
	if err != nil {
		return Plan{}, err
	}
	own.Context = bc
	return Plan{Variant: VariantProject, Tag: own.Tag, Project: &own}, nil
}

// EnsurePlan makes sure of the plan's image: the variant's, or the
// project's own on the browser image, then the agent CLIs' layer on it.
func (b *Builder) EnsurePlan(ctx context.Context, p Plan, report Report) error {
	var err error
	if p.Project == nil {
		err = b.Ensure(ctx, p.Variant, report)
	} else {
		err = b.EnsureProject(ctx, *p.Project, report)
	}
	if err != nil || p.Agents == nil {
		return err
	}
	return b.ensureAgents(ctx, p.Tag, *p.Agents, report.orNothing())
}

// Pinned is what a project's own image's container keeps of the browser
// image: the browser image's PinnedLabels, each set even when the browser
// image has none (""), so that the project's Dockerfile cannot add it.
func (b *Builder) Pinned(ctx context.Context) (map[string]string, error) {
	base, err := b.engine.ImageLabels(ctx, b.cfg.BrowserTag)
	if err != nil {
		return nil, fmt.Errorf("inspect image %s: %w", b.cfg.BrowserTag, err)
	}
	pinned := make(map[string]string, len(PinnedLabels))
	for _, key := range PinnedLabels {
		pinned[key] = base[key]
	}
	return pinned, nil
}

// ContextChanged says whether the project's Dockerfile (or its context)
// changed since its own image, tag, was built from it: the image carries
// the digest of the context it was built from (LabelContext). An image it
// cannot read has not changed; a context it cannot read now has.
func (b *Builder) ContextChanged(ctx context.Context, tag, project, dockerfile string) bool {
	labels, err := b.engine.ImageLabels(ctx, tag)
	if err != nil {
		return false
	}
	bc, err := projectfs.ReadBuildContext(project, dockerfile)
	return err != nil || bc.Digest != labels[LabelContext]
}
