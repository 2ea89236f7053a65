package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/imagebuild"
)

// DefaultImage is the tag the sidecar builds its desktop image under.
const DefaultImage = "pilot-sandbox:latest"

// Image variants, the values of .pilot/settings.json's sandbox.image
// (PROTOCOL.md, Images).
const (
	// VariantBrowser is the desktop plus Chromium: the default.
	VariantBrowser = "browser"
	// VariantDesktop is the desktop without a browser.
	VariantDesktop = "desktop"
)

// BrowserTag is the browser image's tag for a desktop image tag:
// pilot-sandbox:latest -> pilot-sandbox-browser:latest, and a test's
// PILOT_IMAGE=pilot-sandbox:mine -> pilot-sandbox-browser:mine.
func BrowserTag(desktop string) string {
	repo, tag := desktop, "latest"
	if i := strings.LastIndex(desktop, ":"); i > strings.LastIndex(desktop, "/") {
		repo, tag = desktop[:i], desktop[i+1:]
	}
	return repo + "-browser:" + tag
}

// buildLogLines is how much of the build output a failed build keeps.
const buildLogLines = 40

// imageBuild is one image the sidecar builds: its tag, context and
// build arguments.
type imageBuild struct {
	tag   string
	build imagebuild.Context
	args  map[string]string
	// dockerfile is the Dockerfile's name in the context ("" for
	// Dockerfile), and project the project whose own image it is ("" for
	// the sidecar's images).
	dockerfile, project string
	labels              map[string]string // more labels for the image
}

// imagesFor lists the images a variant needs, the one below first.
func (m *Manager) imagesFor(variant string) []imageBuild {
	desktop := imageBuild{tag: m.cfg.Image, build: m.build, args: m.cfg.BuildArgs}
	if variant != VariantBrowser {
		return []imageBuild{desktop}
	}
	return []imageBuild{desktop, {tag: m.cfg.BrowserImage, build: m.browserBuild, args: map[string]string{"DESKTOP": m.cfg.Image}}}
}

// tagFor is the image tag of a variant.
func (m *Manager) tagFor(variant string) string {
	images := m.imagesFor(variant)
	return images[len(images)-1].tag
}

// EnsureImage builds the default variant's images unless images with this
// binary's build hashes exist, reporting progress for project (which may
// be "").
func (m *Manager) EnsureImage(ctx context.Context, project string) error {
	return m.ensureVariant(ctx, project, m.cfg.DefaultVariant)
}

// ensureVariant makes sure of every image the variant needs. Only one check
// or build runs at a time; others wait for it.
func (m *Manager) ensureVariant(ctx context.Context, project, variant string) error {
	if variant == VariantBrowser && m.browserBuild.Tar == nil {
		return fmt.Errorf("%w: this sidecar has no browser image to build", ErrNoBrowser)
	}
	m.imageMu.Lock()
	defer m.imageMu.Unlock()
	for _, img := range m.imagesFor(variant) {
		if err := m.ensureOne(ctx, project, img); err != nil {
			return err
		}
	}
	return nil
}

// ensureOne builds one image unless it exists with its build hash and is
// younger than the policy's rebuildAfter. An image rebuilt for its age is
// built without the cache; if that fails, the old image serves on.
func (m *Manager) ensureOne(ctx context.Context, project string, img imageBuild) error {
	labels, err := m.docker.ImageLabels(ctx, img.tag)
	if err != nil && !errors.Is(err, ErrImageNotFound) {
		return fmt.Errorf("inspect image %s: %w", img.tag, err)
	}
	policy, _ := m.currentPolicy()
	v := judgeImage(labels, err == nil, img.build.Hash, m.cfg.Now(), policy.RebuildAfter)
	if v.reason == "" {
		return nil
	}
	reason := v.reason
	if pulled, why := m.tryPull(ctx, project, img); pulled {
		return nil
	} else if why != "" {
		reason += "; " + why
	}
	err = m.buildOne(ctx, project, img, reason, v.forAge)
	if err != nil && v.forAge && !errors.Is(err, context.Canceled) {
		m.log.Warn().Err(err).Str("image", img.tag).Msg("could not rebuild the sandbox image for security updates; using the old one")
		m.progress(project, StageImage, fmt.Sprintf("Could not rebuild the sandbox image %s; using the one it has (%v)", img.tag, err), 0, 0)
		return nil
	}
	return err
}

// buildOne builds an image, saying why; noCache builds every step anew (a
// rebuild for security updates).
func (m *Manager) buildOne(ctx context.Context, project string, img imageBuild, reason string, noCache bool) error {
	m.log.Info().Str("image", img.tag).Str("hash", img.build.Hash).Msg("building the sandbox image: it " + reason)
	m.progress(project, StageImage, fmt.Sprintf("Building the sandbox image %s (it %s)", img.tag, reason), 0, 0)

	tail := imagebuild.NewTail(buildLogLines)
	steps := imagebuild.NewSteps(func(msg string, cur, total int) { m.progress(project, StageImage, msg, cur, total) })
	want := map[string]string{
		LabelImageHash: img.build.Hash, LabelSandbox: "image",
		LabelImageBuilt: m.cfg.Now().UTC().Format(time.RFC3339),
	}
	if img.project != "" {
		want[LabelProject] = img.project
	}
	maps.Copy(want, img.labels)
	err := m.docker.BuildImage(ctx, BuildSpec{
		Tag:        img.tag,
		Context:    bytes.NewReader(img.build.Tar),
		Dockerfile: img.dockerfile,
		Labels:     want,
		BuildArgs:  m.buildArgs(ctx, img),
		NoCache:    noCache,
		Output: func(line string) {
			tail.Add(line)
			steps.Line(line)
			m.log.Debug().Str("build", line).Msg("image build")
		},
	})
	if err != nil {
		if errors.Is(err, ErrDockerUnavailable) || errors.Is(err, context.Canceled) {
			return err
		}
		return NewBuildError(tail.Lines(), err)
	}
	m.progress(project, StageImage, "Built the sandbox image "+img.tag, 0, 0)
	return nil
}

// Registry says whether an image reference names a repository in a
// registry, which a pull can fetch: one with a namespace or a registry's
// host ("ghcr.io/team/pilot-sandbox:1.4", "team/pilot-sandbox"). The
// sidecar's own tags ("pilot-sandbox:latest") have neither, and are only
// ever built here: a pull would ask Docker Hub for a library image of
// that name.
func Registry(ref string) bool {
	repo := ref
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		repo = ref[:i]
	}
	return strings.Contains(repo, "/")
}

// tryPull pulls an image that PILOT_IMAGE names in a registry, and keeps
// it if it carries this sidecar's build hash: the image a team published
// from the same files saves every machine its build. It reports why it
// did not (the pull failed, or the image is of other files), for the
// build's progress, or "" when the image names no registry.
func (m *Manager) tryPull(ctx context.Context, project string, img imageBuild) (pulled bool, why string) {
	if !Registry(img.tag) {
		return false, ""
	}
	m.progress(project, StageImage, "Pulling the sandbox image "+img.tag, 0, 0)
	err := m.docker.PullImage(ctx, img.tag, func(p PullProgress) {
		m.progress(project, StageImage, "Pulling the sandbox image "+img.tag+": "+p.Status, int(p.Current), int(p.Total))
	})
	if err != nil {
		m.log.Info().Err(err).Str("image", img.tag).Msg("could not pull the sandbox image; building it")
		return false, "the pull failed: " + err.Error()
	}
	labels, err := m.docker.ImageLabels(ctx, img.tag)
	if err != nil || labels[LabelImageHash] != img.build.Hash {
		m.log.Info().Str("image", img.tag).Str("hash", labels[LabelImageHash]).Str("want", img.build.Hash).
			Msg("the pulled sandbox image is not of this sidecar's files; building it")
		return false, "the pulled image is of other files (" + LabelImageHash + " " + labels[LabelImageHash] + ")"
	}
	m.progress(project, StageImage, "Pulled the sandbox image "+img.tag, 0, 0)
	return true, ""
}
