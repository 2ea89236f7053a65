package desktop

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/pilot-sandbox/pilot-sandbox/resources"
)

// ErrViewerMismatch: the page the sandbox serves as its viewer is not the
// sidecar's own copy (resources/docker/sandbox/viewer). Something else than
// the desktop's websockify answers on its port, or the image is not the
// one this sidecar built: either way the panel must not load it, as its
// script would run on a loopback origin and be handed the VNC password.
var ErrViewerMismatch = errors.New("the sandbox's viewer page is not the sidecar's own")

// viewerFiles are the files of the viewer as the sidecar embeds them, by
// name, with their SHA-256.
var viewerFiles = mustViewerSums(resources.SandboxImage(), "viewer")

func mustViewerSums(fsys fs.FS, dir string) map[string][sha256.Size]byte {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil || len(entries) == 0 {
		panic(fmt.Sprintf("the embedded viewer is missing: %v", err))
	}
	sums := map[string][sha256.Size]byte{}
	for _, e := range entries {
		data, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			panic(err)
		}
		sums[e.Name()] = sha256.Sum256(data)
	}
	return sums
}

// checkViewer fetches the page at viewerPath (a LabelViewer value), or,
// with page false, the viewer's other files beside it, and compares each
// with the sidecar's copy.
func checkViewer(ctx context.Context, base, viewerPath string, page bool) error {
	dir := path.Dir(viewerPath)
	for name, want := range viewerFiles {
		if (name == path.Base(viewerPath)) != page {
			continue
		}
		body, err := getPage(ctx, "http://"+base+"/"+path.Join(dir, name))
		if err != nil {
			return fmt.Errorf("viewer page %s: %w", name, err)
		}
		if sha256.Sum256(body) != want {
			return fmt.Errorf("%w: %s differs (%d bytes)", ErrViewerMismatch, name, len(body))
		}
	}
	return nil
}
