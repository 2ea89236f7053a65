package engine_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
)

// The real engine pulls an image from a registry: here a minimal one in
// the test (the Registry HTTP API v2, plain HTTP, which the engine allows
// on 127.0.0.1), serving an image the engine built and saved. The pulled
// image keeps its labels, and the download is reported; a tag the
// registry lacks fails the pull.
func TestPullImageFromARegistry(t *testing.T) {
	c := dockertest.Engine(t)
	if info, err := c.Info(context.Background()); err != nil || !strings.HasPrefix(info.Endpoint, "unix://") {
		t.Skipf("the engine at %s may not reach this test's 127.0.0.1", info.Endpoint)
	}
	api := dockertest.NewAPI(t)
	src := fmt.Sprintf("pilot-pull-src:%d", time.Now().UnixNano())
	ctx := context.Background()
	err := c.BuildImage(ctx, images.BuildSpec{
		Tag:     src,
		Context: bytes.NewReader(tarOf(t, map[string]string{"Dockerfile": "FROM scratch\nCOPY noise /noise\n", "noise": noise(2 << 20)})),
		Labels:  map[string]string{images.LabelHash: "pull-test"},
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, api.Get("/images/"+src+"/get"))
	api.Delete("/images/" + src + "?force=1") // or the engine has the layer already
	ref := reg.host + "/pilot-pull-test/desktop:1"

	var last images.PullProgress
	if err := c.PullImage(ctx, ref, func(p images.PullProgress) { last = p }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Delete("/images/" + ref + "?force=1") })
	if last.Total == 0 || last.Current != last.Total {
		t.Errorf("last progress %+v: want the layer's bytes, all downloaded", last)
	}
	labels, err := c.ImageLabels(ctx, ref)
	if err != nil || labels[images.LabelHash] != "pull-test" {
		t.Errorf("the pulled image's labels: %v, %v", labels, err)
	}
	if err := c.PullImage(ctx, reg.host+"/pilot-pull-test/desktop:2", func(images.PullProgress) {}); err == nil {
		t.Error("a tag the registry lacks was pulled")
	}
}

// noise is n bytes that do not compress, so that the layer's download
// takes more than one report.
func noise(n int) string {
	b := make([]byte, n)
	x := uint32(1)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return string(b)
}

func tarOf(t *testing.T, files map[string]string) []byte {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for name, body := range files {
		w.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))})
		w.Write([]byte(body))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// registry serves one image, from the archive `docker save` makes, under
// any name and the tag 1.
type registry struct {
	host     string
	manifest []byte
	blobs    map[string][]byte // by digest
}

func newRegistry(t *testing.T, saved []byte) *registry {
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(saved))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name], _ = io.ReadAll(tr)
	}
	var saves []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(files["manifest.json"], &saves); err != nil || len(saves) != 1 {
		t.Fatalf("the saved image's manifest: %v", err)
	}
	r := &registry{blobs: map[string][]byte{}}
	add := func(data []byte) (string, int) {
		d := fmt.Sprintf("sha256:%x", sha256.Sum256(data))
		r.blobs[d] = data
		return d, len(data)
	}
	type desc struct {
		MediaType string `json:"mediaType"`
		Size      int    `json:"size"`
		Digest    string `json:"digest"`
	}
	m := struct {
		SchemaVersion int    `json:"schemaVersion"`
		MediaType     string `json:"mediaType"`
		Config        desc   `json:"config"`
		Layers        []desc `json:"layers"`
	}{SchemaVersion: 2, MediaType: "application/vnd.docker.distribution.manifest.v2+json"}
	d, n := add(files[saves[0].Config])
	m.Config = desc{"application/vnd.docker.container.image.v1+json", n, d}
	for _, l := range saves[0].Layers {
		var gz bytes.Buffer
		w := gzip.NewWriter(&gz)
		w.Write(files[l])
		w.Close()
		d, n := add(gz.Bytes())
		m.Layers = append(m.Layers, desc{"application/vnd.docker.image.rootfs.diff.tar.gzip", n, d})
	}
	r.manifest, _ = json.Marshal(m)
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	r.host = "127.0.0.1:" + port
	return r
}

// digest is the manifest's, by which the engine asks for it again.
func (r *registry) digest() string { return fmt.Sprintf("sha256:%x", sha256.Sum256(r.manifest)) }

func (r *registry) serve(w http.ResponseWriter, req *http.Request) {
	path := req.URL.Path
	switch {
	case path == "/v2/":
		w.Write([]byte("{}"))
	case strings.HasSuffix(path, "/manifests/1"), strings.HasSuffix(path, "/manifests/"+r.digest()):
		w.Header().Set("Content-Type", "application/vnd.docker.distribution.manifest.v2+json")
		w.Header().Set("Docker-Content-Digest", r.digest())
		w.Write(r.manifest)
	case strings.Contains(path, "/blobs/"):
		blob, ok := r.blobs[path[strings.LastIndex(path, "/")+1:]]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(blob))) // as registries send it
		w.Write(blob)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}`))
	}
}
