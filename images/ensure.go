package images

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"
)

// buildLogLines is how much of the build output a failed build keeps.
const buildLogLines = 40

// image is one image to make sure of: its tag, context and build
// arguments.
type image struct {
	tag   string
	build buildContext
	args  map[string]string
	// dockerfile is the Dockerfile's name in the context ("" for
	// Dockerfile).
	dockerfile string
	labels     map[string]string // more labels for the image
	// sandboxScope is, for a project's own image, the scope whose
	// sandboxes' network its RUN steps join (BuildSpec.SandboxScope).
	sandboxScope string
}

// variant lists the images a variant needs, the one below first: the dev
// image is a layer on the browser image, which is one on the desktop's.
func (b *Builder) variant(name string) []image {
	all := []image{{tag: b.cfg.Tag, build: b.desktop, args: b.cfg.BuildArgs}}
	if name == VariantBrowser || name == VariantDev {
		all = append(all, image{tag: b.cfg.BrowserTag, build: b.browser, args: map[string]string{"DESKTOP": b.cfg.Tag}})
	}
	if name == VariantDev {
		all = append(all, image{tag: b.cfg.DevTag, build: b.dev, args: map[string]string{"BROWSER": b.cfg.BrowserTag}})
	}
	return all
}

// top is the variant's own image, the last it needs.
func (b *Builder) top(variant string) image {
	all := b.variant(variant)
	return all[len(all)-1]
}

// Ensure makes sure of every image the variant needs, building those that
// are missing, out of date or old. Only one check or build runs at a time;
// others wait for it. A build that fails is a *BuildError.
func (b *Builder) Ensure(ctx context.Context, variant string, report Report) error {
	report = report.orNothing()
	switch {
	case (variant == VariantBrowser || variant == VariantDev) && !b.HasBrowser():
		return fmt.Errorf("%w: this sidecar has no browser image to build", ErrNoBrowser)
	case variant == VariantDev && b.dev.Tar == nil:
		return errors.New("this sidecar has no dev image to build")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, img := range b.variant(variant) {
		if err := b.ensureOne(ctx, img, report); err != nil {
			return err
		}
	}
	return nil
}

// ensureOne builds one image unless it exists with its build hash and is
// younger than rebuildAfter. An image rebuilt for its age is built without
// the cache; if that fails, the old image serves on. b.mu is held.
func (b *Builder) ensureOne(ctx context.Context, img image, report Report) error {
	labels, err := b.engine.ImageLabels(ctx, img.tag)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("inspect image %s: %w", img.tag, err)
	}
	v := judge(labels, err == nil, img.build.Hash, b.cfg.Now(), b.cfg.RebuildAfter())
	if v.reason == "" {
		return nil
	}
	reason := v.reason
	if pulled, why := b.pull(ctx, img, report); pulled {
		return nil
	} else if why != "" {
		reason += "; " + why
	}
	err = b.build(ctx, img, reason, v.forAge, report)
	if err != nil && v.forAge && !errors.Is(err, context.Canceled) {
		b.log.Warn().Err(err).Str("image", img.tag).Msg("could not rebuild the sandbox image for security updates; using the old one")
		report(fmt.Sprintf("Could not rebuild the sandbox image %s; using the one it has (%v)", img.tag, err), 0, 0)
		return nil
	}
	return err
}

// build builds an image, saying why; noCache builds every step anew (a
// rebuild for security updates).
func (b *Builder) build(ctx context.Context, img image, reason string, noCache bool, report Report) error {
	b.log.Info().Str("image", img.tag).Str("hash", img.build.Hash).Msg("building the sandbox image: it " + reason)
	report(fmt.Sprintf("Building the sandbox image %s (it %s)", img.tag, reason), 0, 0)

	tail := newLastLines(buildLogLines)
	steps := newStepProgress(report)
	labels := maps.Clone(b.cfg.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelHash] = img.build.Hash
	labels[LabelBuilt] = b.cfg.Now().UTC().Format(time.RFC3339)
	maps.Copy(labels, img.labels)
	err := b.engine.BuildImage(ctx, BuildSpec{
		Tag:          img.tag,
		Context:      bytes.NewReader(img.build.Tar),
		Dockerfile:   img.dockerfile,
		Labels:       labels,
		BuildArgs:    b.buildArgs(ctx, img),
		NoCache:      noCache,
		SandboxScope: img.sandboxScope,
		Output: func(line string) {
			tail.add(line)
			steps.line(line)
			b.log.Debug().Str("build", line).Msg("image build")
		},
	})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return err
		}
		return &BuildError{Log: tail.lines(), Err: err}
	}
	report("Built the sandbox image "+img.tag, 0, 0)
	return nil
}

// InRegistry says whether an image reference names a repository in a
// registry, which a pull can fetch: one with a namespace or a registry's
// host ("ghcr.io/team/pilot-sandbox:1.4", "team/pilot-sandbox"). The
// sidecar's own tags ("pilot-sandbox:latest") have neither, and are only
// ever built here: a pull would ask Docker Hub for a library image of
// that name.
func InRegistry(ref string) bool {
	repo, _ := splitTag(ref)
	return strings.Contains(repo, "/")
}

// pull pulls an image whose tag names a registry, and keeps it if it
// carries its build hash: the image a team published from the same files
// saves every machine its build. It reports why it did not (the pull
// failed, or the image is of other files), for the build's progress, or ""
// when the image names no registry.
func (b *Builder) pull(ctx context.Context, img image, report Report) (pulled bool, why string) {
	if !InRegistry(img.tag) {
		return false, ""
	}
	report("Pulling the sandbox image "+img.tag, 0, 0)
	err := b.engine.PullImage(ctx, img.tag, func(p PullProgress) {
		report("Pulling the sandbox image "+img.tag+": "+p.Status, int(p.Current), int(p.Total))
	})
	if err != nil {
		b.log.Info().Err(err).Str("image", img.tag).Msg("could not pull the sandbox image; building it")
		return false, "the pull failed: " + err.Error()
	}
	labels, err := b.engine.ImageLabels(ctx, img.tag)
	if err != nil || labels[LabelHash] != img.build.Hash {
		b.log.Info().Str("image", img.tag).Str("hash", labels[LabelHash]).Str("want", img.build.Hash).
			Msg("the pulled sandbox image is not of this sidecar's files; building it")
		return false, "the pulled image is of other files (" + LabelHash + " " + labels[LabelHash] + ")"
	}
	report("Pulled the sandbox image "+img.tag, 0, 0)
	return true, ""
}
