package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"

	units "github.com/docker/go-units"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// A project may bring its own Dockerfile, read from its repository, which
// may be a stranger's: service builds it only once the user approved
// exactly its build context (Summary says what that allows, the context's
// digest names it). The image carries that digest (LabelContext) and a
// build hash over it and the browser image it builds on.

// Project is a project's own image: its tag, the build context read from
// the project (what the user approved), and labels that say whose it is.
type Project struct {
	Tag     string
	Context projectfs.BuildContext
	Labels  map[string]string
	// Scope is the sandboxes' scope, whose network the build's RUN steps
	// join (BuildSpec.SandboxScope).
	Scope string
}

// Summary says, for the user to approve, what building a project's
// context on the browser image does.
func Summary(bc projectfs.BuildContext) string {
	return fmt.Sprintf("build %s (%s) FROM the browser image and run it as this project's sandbox; "+
		"its build context %s holds %d files (%s), and its build steps run as root with network access",
		bc.Dockerfile, units.BytesSize(float64(bc.DockerfileSize)), bc.Dir+"/", bc.Files, units.BytesSize(float64(bc.Bytes)))
}

// EnsureProject makes sure of a project's own image, built on the browser
// image (its build argument PILOT_BASE), which it makes sure of first.
func (b *Builder) EnsureProject(ctx context.Context, p Project, report Report) error {
	report = report.orNothing()
	if err := b.Ensure(ctx, VariantBrowser, report); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ensureOne(ctx, b.project(p), report)
}

// project is the build of a project's own image. Its hash covers the
// context and the browser image it builds on, so either's change rebuilds.
func (b *Builder) project(p Project) image {
	sum := sha256.Sum256([]byte(b.browser.Hash + "\x00" + p.Context.Digest + "\x00" + b.cfg.BrowserTag))
	labels := maps.Clone(p.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelContext] = p.Context.Digest
	return image{
		tag:          p.Tag,
		build:        buildContext{Tar: p.Context.Tar, Hash: hex.EncodeToString(sum[:])},
		args:         map[string]string{"PILOT_BASE": b.cfg.BrowserTag},
		dockerfile:   p.Context.Name,
		labels:       labels,
		sandboxScope: p.Scope,
	}
}

// RemoveProject deletes a project's own image (p's Tag), if it is one
// built for it (it carries every one of p's Labels): nothing else uses it.
// It says whether it removed one.
func (b *Builder) RemoveProject(ctx context.Context, p Project) (bool, error) {
	labels, err := b.engine.ImageLabels(ctx, p.Tag)
	if err != nil {
		return false, nil
	}
	for k, v := range p.Labels {
		if labels[k] != v {
			return false, nil
		}
	}
	if err := b.engine.RemoveImage(ctx, p.Tag); err != nil && !errors.Is(err, ErrNotFound) {
		return false, fmt.Errorf("remove image %s: %w", p.Tag, err)
	}
	return true, nil
}
