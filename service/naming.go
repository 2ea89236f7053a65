package service

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
)

// Labels on every sandbox container, and on the image.
const (
	LabelSandbox = "pilot.sandbox"
	LabelProject = "pilot.project"
	// LabelViewer, set by the image's Dockerfile (so every container made
	// from it carries it too), is the path of the sandbox's own viewer page
	// on the noVNC port.
	LabelViewer = "pilot.sandbox.viewer"
	// LabelVariant, set on the container when it is created, is the kind
	// of image it runs: images.VariantDesktop, VariantBrowser or
	// VariantProject.
	// On the container, not the image, so a project's Dockerfile cannot
	// claim another.
	LabelVariant = "pilot.sandbox.variant"
)

// ContainerName is the sandbox container's name for a canonical project path:
// readable, and the same every time, so that the engine itself refuses a
// second container for one project (two sidecars, or a crash mid-create).
func ContainerName(project string) string {
	sum := sha256.Sum256([]byte(project))
	slug := slugify(filepath.Base(project))
	if slug == "" {
		slug = "project"
	}
	return "pilot-sandbox-" + slug + "-" + hex.EncodeToString(sum[:])[:10]
}

// slugify keeps what Docker allows in a name, lowercased, at most 24 bytes.
func slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		ok := (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9')
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 24 {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}

// DefaultScope is the value of the pilot.sandbox label on real sandboxes.
const DefaultScope = "true"

// projectLabels are the labels of a project's sandbox container.
func projectLabels(scope, project string) map[string]string {
	return map[string]string{LabelSandbox: scope, LabelProject: project}
}

// scopeLabels select every sandbox container of a scope.
func scopeLabels(scope string) map[string]string {
	return map[string]string{LabelSandbox: scope}
}
