package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/pilot-sandbox/pilot-sandbox/imagebuild"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// VariantProject is the image of a project that brings its own Dockerfile
// (sandbox.image {"dockerfile": PATH}): built on the browser image, once
// the user approved it.
const VariantProject = "dockerfile"

// desktopEntrypoint is the desktop images' entrypoint, which a project's
// own image runs whatever its Dockerfile sets.
const desktopEntrypoint = "/usr/local/bin/pilot-desktop"

// LabelContext, on a project's own image, is the digest of the build
// context it was built from (what the user approved).
const LabelContext = "pilot.sandbox.context"

// pinnedLabels are the labels of the browser image a project's container
// keeps whatever the project's Dockerfile set: they say which user runs the
// desktop, where its VNC passwords go, which viewer page is the sidecar's,
// and that it has a browser.
var pinnedLabels = []string{LabelDesktopUser, LabelVNCDir, LabelViewer, LabelBrowser}

// ProjectTag is the tag of a project's own image: one per project, on the
// desktop image's repository (pilot-sandbox:latest ->
// pilot-sandbox-project:NAME-HASH); an empty desktopImage is DefaultImage,
// as in Config.
func ProjectTag(desktopImage, project string) string {
	if desktopImage == "" {
		desktopImage = DefaultImage
	}
	repo := desktopImage
	if i := strings.LastIndex(desktopImage, ":"); i > strings.LastIndex(desktopImage, "/") {
		repo = desktopImage[:i]
	}
	return repo + "-project:" + strings.TrimPrefix(ContainerName(project), "pilot-sandbox-")
}

// imagePlan is the image a new container needs: a variant of the
// sidecar's, or the project's own from its build context.
type imagePlan struct {
	variant, tag string
	context      *projectfs.BuildContext // VariantProject only
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
		return imagePlan{variant: variant, tag: m.tagFor(variant)}, nil
	}
	if m.browserBuild.Tar == nil {
		return imagePlan{}, fmt.Errorf("%w: this sidecar has no browser image for a project Dockerfile to build on", ErrNoBrowser)
	}
	bc, err := projectfs.ReadBuildContext(project, df)
	if err != nil {
		return imagePlan{}, err
	}
	if err := m.require(project, m.dockerfileAsk(bc)); err != nil {
		return imagePlan{}, err
	}
	return imagePlan{variant: VariantProject, tag: ProjectTag(m.cfg.Image, project), context: &bc}, nil
}

// ensurePlan makes sure of the plan's images. A project's own image is
// built on the browser image (PILOT_BASE), and its container keeps the
// browser image's user, entrypoint and labels.
func (m *Manager) ensurePlan(ctx context.Context, project string, plan imagePlan, spec *ContainerSpec) error {
	if plan.variant != VariantProject {
		return m.ensureVariant(ctx, project, plan.variant)
	}
	if err := m.ensureVariant(ctx, project, VariantBrowser); err != nil {
		return err
	}
	img := m.projectBuild(project, plan)
	m.imageMu.Lock()
	err := m.ensureOne(ctx, project, img)
	m.imageMu.Unlock()
	if err != nil {
		return err
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

// projectBuild is the build of a project's own image. Its hash covers the
// context and the browser image it builds on, so either's change rebuilds.
func (m *Manager) projectBuild(project string, plan imagePlan) imageBuild {
	sum := sha256.Sum256([]byte(m.browserBuild.Hash + "\x00" + plan.context.Digest + "\x00" + m.cfg.BrowserImage))
	return imageBuild{
		tag:        plan.tag,
		build:      imagebuild.Context{Tar: plan.context.Tar, Hash: hex.EncodeToString(sum[:])},
		args:       map[string]string{"PILOT_BASE": m.cfg.BrowserImage},
		dockerfile: plan.context.Name,
		project:    project,
		labels:     map[string]string{LabelContext: plan.context.Digest},
	}
}

// removeProjectImage deletes the project's own image, if it has one, with
// its sandbox: nothing else uses it.
func (m *Manager) removeProjectImage(ctx context.Context, project string) {
	tag := ProjectTag(m.cfg.Image, project)
	labels, err := m.docker.ImageLabels(ctx, tag)
	if err != nil || labels[LabelProject] != project {
		return
	}
	if err := m.docker.RemoveImage(ctx, tag); err != nil && !errors.Is(err, ErrImageNotFound) {
		m.log.Warn().Err(err).Str("image", tag).Msg("could not remove the project's image")
		return
	}
	m.log.Info().Str("project", project).Str("image", tag).Msg("removed the project's image")
}

// noteImageChange says, in the start's progress, when the project's
// Dockerfile (or its context) changed since its sandbox was made: the
// image applies to a new sandbox, as every sandbox.image does.
func (m *Manager) noteImageChange(ctx context.Context, b *box, pc projectfs.Config, c Container) {
	df := pc.ImageDockerfile()
	if df == "" || c.Image != ProjectTag(m.cfg.Image, b.project) {
		return
	}
	labels, err := m.docker.ImageLabels(ctx, c.Image)
	if err != nil {
		return
	}
	bc, err := projectfs.ReadBuildContext(b.project, df)
	if err == nil && bc.Digest == labels[LabelContext] {
		return
	}
	m.progress(b.project, StageStart, fmt.Sprintf("%s changed since this sandbox was made: it applies to a new sandbox; "+
		"remove the sandbox (its files go with it) to build and use it", df), 0, 0)
}
