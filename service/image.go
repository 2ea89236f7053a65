package service

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// A project's sandbox runs a variant of the sidecar's images
// (sandbox.image "desktop" or "browser"), or its own image, built from its
// Dockerfile on the browser image once the user approved it (package
// images builds it). Its container keeps the desktop's user, entrypoint
// and labels whatever the Dockerfile set.

// desktopEntrypoint is the desktop images' entrypoint, which a project's
// own image runs whatever its Dockerfile sets.
const desktopEntrypoint = "/usr/local/bin/pilot-desktop"

// pinnedLabels are the labels of the browser image a project's container
// keeps whatever the project's Dockerfile set: they say which user runs the
// desktop, where its VNC passwords go, which viewer page is the sidecar's,
// and that it has a browser.
var pinnedLabels = []string{LabelDesktopUser, LabelVNCDir, LabelViewer, LabelBrowser}

// ProjectTag is the tag of a project's own image: one per project, on the
// desktop image's repository (pilot-sandbox:latest ->
// pilot-sandbox-project:NAME-HASH); an empty desktopImage is
// images.DefaultTag, as in Config. It is the tag of a sandbox without an
// owner (owner.go); a manager with one uses its projectTag.
func ProjectTag(desktopImage, project string) string {
	return projectTag(desktopImage, ContainerName(project))
}

// projectTag is the tag of the project's own image of this user's (two
// users of one engine may have a project at the same path: owner.go).
func (m *Manager) projectTag(project string) string {
	return projectTag(m.cfg.Image, m.containerName(project))
}

// projectTag is ProjectTag for the sandbox container of that name.
func projectTag(desktopImage, container string) string {
	if desktopImage == "" {
		desktopImage = images.DefaultTag
	}
	repo := desktopImage
	if i := strings.LastIndex(desktopImage, ":"); i > strings.LastIndex(desktopImage, "/") {
		repo = desktopImage[:i]
	}
	return repo + "-project:" + strings.TrimPrefix(container, "pilot-sandbox-")
}

// EnsureImage builds the default variant's images unless images with this
// binary's build hashes exist, reporting progress for project (which may
// be "").
func (m *Manager) EnsureImage(ctx context.Context, project string) error {
	return imageErr(m.images.Ensure(ctx, m.cfg.DefaultVariant, m.imageProgress(project)))
}

// imageProgress reports the images' steps as the project's progress.
func (m *Manager) imageProgress(project string) images.Report {
	return func(msg string, current, total int) { m.progress(project, StageImage, msg, current, total) }
}

// rebuildAfter is the policy's age past which an image is rebuilt.
func (m *Manager) rebuildAfter() time.Duration {
	policy, _ := m.currentPolicy()
	return policy.RebuildAfter
}

// imagePlan is the image a new container needs: a variant of the
// sidecar's, or the project's own from its build context.
type imagePlan struct {
	variant, tag string
	context      *projectfs.BuildContext // images.VariantProject only
}

// planImage decides the image of the project's new container. A project
// Dockerfile is read (its context packed) and must be approved.
func (m *Manager) planImage(project string, pc projectfs.Config) (imagePlan, error) {
	df := pc.ImageDockerfile()
	if df == "" {
		variant := m.cfg.DefaultVariant
		if v := pc.ImageVariant(); v != "" {
			variant = v
		}
		return imagePlan{variant: variant, tag: m.images.Tag(variant)}, nil
	}
	if !m.images.HasBrowser() {
		return imagePlan{}, fmt.Errorf("%w: this sidecar has no browser image for a project Dockerfile to build on", ErrNoBrowser)
	}
	bc, err := projectfs.ReadBuildContext(project, df)
	if err != nil {
		return imagePlan{}, err
	}
	ask, err := dockerfileAsk(project, bc)
	if err != nil {
		return imagePlan{}, err
	}
	if err := m.require(project, ask); err != nil {
		return imagePlan{}, err
	}
	return imagePlan{variant: images.VariantProject, tag: m.projectTag(project), context: &bc}, nil
}

// projectImage is the project's own image as the images know it.
func (m *Manager) projectImage(project string, bc projectfs.BuildContext) images.Project {
	return images.Project{Tag: m.projectTag(project), Context: bc, Labels: map[string]string{LabelProject: project}, Scope: m.cfg.Scope}
}

// ensurePlan makes sure of the plan's images. A project's own image is
// built on the browser image, and its container keeps the browser image's
// user, entrypoint and labels.
func (m *Manager) ensurePlan(ctx context.Context, project string, plan imagePlan, spec *ContainerSpec) error {
	if plan.variant != images.VariantProject {
		return imageErr(m.images.Ensure(ctx, plan.variant, m.imageProgress(project)))
	}
	if err := m.images.EnsureProject(ctx, m.projectImage(project, *plan.context), m.imageProgress(project)); err != nil {
		return imageErr(err)
	}
	base, err := m.docker.ImageLabels(ctx, m.cfg.BrowserImage)
	if err != nil {
		return fmt.Errorf("inspect image %s: %w", m.cfg.BrowserImage, err)
	}
	for _, key := range pinnedLabels {
		// Set even when the base has none (""), so that the project's
		// Dockerfile cannot add it either.
		spec.Labels[key] = base[key]
	}
	spec.User, _ = desktopUserOf(Container{Labels: base})
	spec.Entrypoint = []string{desktopEntrypoint}
	return nil
}

// removeProjectImage deletes the project's own image, if it has one, with
// its sandbox: nothing else uses it.
func (m *Manager) removeProjectImage(ctx context.Context, project string) {
	p := m.projectImage(project, projectfs.BuildContext{})
	removed, err := m.images.RemoveProject(ctx, p)
	switch {
	case err != nil:
		m.log.Warn().Err(err).Str("image", p.Tag).Msg("could not remove the project's image")
	case removed:
		m.log.Info().Str("project", project).Str("image", p.Tag).Msg("removed the project's image")
	}
}

// noteImageChange says, in the start's progress, when the project's
// Dockerfile (or its context) changed since its sandbox was made: the
// image applies to a new sandbox, as every sandbox.image does.
func (m *Manager) noteImageChange(ctx context.Context, b *box, pc projectfs.Config, c Container) {
	df := pc.ImageDockerfile()
	if df == "" || c.Image != m.projectTag(b.project) {
		return
	}
	labels, err := m.docker.ImageLabels(ctx, c.Image)
	if err != nil {
		return
	}
	bc, err := projectfs.ReadBuildContext(b.project, df)
	if err == nil && bc.Digest == labels[images.LabelContext] {
		return
	}
	m.progress(b.project, StageStart, fmt.Sprintf("%s changed since this sandbox was made: it applies to a new sandbox; "+
		"remove the sandbox (its files go with it) to build and use it", df), 0, 0)
}
