package images

import (
	"context"
	"io/fs"
	"maps"
	"regexp"
	"strings"
)

// The desktop image's base is pinned by digest in its Dockerfile (the
// default of ARG BASE_IMAGE, docs/images.md), so a base the engine pulls
// is that one image whatever the tag points to that day. A machine that
// cannot pull (no Docker Hub) brings its own base under the tag
// (scripts/dev-env.sh imports one it makes with mmdebstrap).

// baseArg is the name of the Dockerfile's base image argument.
const baseArg = "BASE_IMAGE"

var baseArgLine = regexp.MustCompile(`(?m)^ARG ` + baseArg + `=(\S+)$`)

// pinnedBase is the default of the Dockerfile's ARG BASE_IMAGE in files
// ("debian:bookworm-slim@sha256:…"), or "" if it names none.
func pinnedBase(files fs.FS) string {
	data, err := fs.ReadFile(files, "Dockerfile")
	if err != nil {
		return ""
	}
	m := baseArgLine.FindSubmatch(data)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// baseTag is a pinned reference without its digest: the tag a base made or
// pulled by other means goes by.
func baseTag(pinned string) string {
	tag, _, _ := strings.Cut(pinned, "@")
	return tag
}

// buildArgs are the image's build arguments; the desktop image's are: the
// user's BASE_IMAGE if set; else the pinned base (the Dockerfile's
// default), which the engine pulls by digest when it does not have it; but
// when the engine has no image under the pinned reference and one under
// its tag (imported or pulled before), that one, as nothing is pulled
// then.
func (b *Builder) buildArgs(ctx context.Context, img image) map[string]string {
	pinned := pinnedBase(b.cfg.Resources)
	if img.tag != b.cfg.Tag || pinned == "" || img.args[baseArg] != "" {
		return img.args
	}
	if _, err := b.engine.ImageLabels(ctx, pinned); err == nil {
		return img.args
	}
	tag := baseTag(pinned)
	if tag == pinned {
		return img.args
	}
	if _, err := b.engine.ImageLabels(ctx, tag); err != nil {
		return img.args
	}
	b.log.Info().Str("base", tag).Str("pinned", pinned).Msg("building on the engine's own base image: it has none under the pinned digest")
	args := maps.Clone(img.args)
	if args == nil {
		args = map[string]string{}
	}
	args[baseArg] = tag
	return args
}
