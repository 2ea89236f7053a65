package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
}

// imagesFor lists the images a variant needs, the one below first.
func (m *Manager) imagesFor(variant string) []imageBuild {
	desktop := imageBuild{m.cfg.Image, m.build, m.cfg.BuildArgs}
	if variant != VariantBrowser {
		return []imageBuild{desktop}
	}
	return []imageBuild{desktop, {m.cfg.BrowserImage, m.browserBuild, map[string]string{"DESKTOP": m.cfg.Image}}}
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
	err = m.buildOne(ctx, project, img, v)
	if err != nil && v.forAge && !errors.Is(err, context.Canceled) {
		m.log.Warn().Err(err).Str("image", img.tag).Msg("could not rebuild the sandbox image for security updates; using the old one")
		m.progress(project, StageImage, fmt.Sprintf("Could not rebuild the sandbox image %s; using the one it has (%v)", img.tag, err), 0, 0)
		return nil
	}
	return err
}

// buildOne builds an image, saying why.
func (m *Manager) buildOne(ctx context.Context, project string, img imageBuild, v imageVerdict) error {
	m.log.Info().Str("image", img.tag).Str("hash", img.build.Hash).Msg("building the sandbox image: it " + v.reason)
	m.progress(project, StageImage, fmt.Sprintf("Building the sandbox image %s (it %s)", img.tag, v.reason), 0, 0)

	tail := imagebuild.NewTail(buildLogLines)
	steps := imagebuild.NewSteps(func(msg string, cur, total int) { m.progress(project, StageImage, msg, cur, total) })
	err := m.docker.BuildImage(ctx, BuildSpec{
		Tag:     img.tag,
		Context: bytes.NewReader(img.build.Tar),
		Labels: map[string]string{
			LabelImageHash: img.build.Hash, LabelSandbox: "image",
			LabelImageBuilt: m.cfg.Now().UTC().Format(time.RFC3339),
		},
		BuildArgs: m.buildArgs(ctx, img),
		NoCache:   v.forAge,
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
