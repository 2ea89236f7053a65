package images

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// reviewOf packs a project whose .pilot holds files, and reviews it.
func reviewOf(t *testing.T, files map[string]string) (Review, error) {
	t.Helper()
	project := t.TempDir()
	for name, text := range files {
		p := filepath.Join(project, ".pilot", name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bc, err := projectfs.ReadBuildContext(project, ".pilot/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	return ReviewContext(bc)
}

func TestReviewShowsTheDockerfileItsFilesAndWarnings(t *testing.T) {
	dockerfile := `# syntax comment
ARG PILOT_BASE
FROM python:3.12 AS tools
RUN pip download requests
FROM ${PILOT_BASE}
ARG PROXY=http://127.0.0.1:3128
ENV API=http://host.docker.internal:8080 \
    OTHER=10.0.0.7
COPY app.sh scripts/ /usr/local/bin/
COPY --from=tools /root /opt/tools
COPY --from=alpine:3 /bin/busybox /opt/busybox
RUN --network=host echo hi
USER root
RUN apt-get update && apt-get install -y jq
`
	r, err := reviewOf(t, map[string]string{
		"Dockerfile":      dockerfile,
		"app.sh":          "#!/bin/sh\necho app\n",
		"scripts/big.bin": strings.Repeat("x", 70<<10),
		"scripts/tool":    "\x00\x01binary",
		"unused.txt":      "not copied",
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Dockerfile != dockerfile {
		t.Errorf("the Dockerfile's text: %q", r.Dockerfile)
	}
	want := []ShownFile{
		{Path: ".pilot/app.sh", Size: 19, Text: "#!/bin/sh\necho app\n"},
		{Path: ".pilot/scripts/big.bin", Size: 70 << 10, Omitted: "larger than 64 KiB"},
		{Path: ".pilot/scripts/tool", Size: 8, Omitted: "not text"},
	}
	if !slices.Equal(r.Files, want) {
		t.Errorf("files shown:\n%+v\nwant\n%+v", r.Files, want)
	}
	for _, w := range []string{
		"line 3: FROM takes the image python:3.12, which the engine pulls from Docker Hub",
		"line 6: ARG names 127.0.0.1, an address of this machine or its network",
		"line 7: ENV names 10.0.0.7, an address of this machine or its network",
		"line 7: ENV names host.docker.internal, an address of this machine or its network",
		"line 11: COPY takes the image alpine:3, which the engine pulls from Docker Hub",
		"line 12: RUN --network=host changes what the step may reach",
	} {
		if !slices.Contains(r.Warnings, w) {
			t.Errorf("no warning %q in\n%s", w, strings.Join(r.Warnings, "\n"))
		}
	}
	if len(r.Warnings) != 6 {
		t.Errorf("%d warnings, want 6:\n%s", len(r.Warnings), strings.Join(r.Warnings, "\n"))
	}
}

func TestReviewRefusesWhatTheEngineFetchesItself(t *testing.T) {
	for _, tc := range []struct{ line, says string }{
		{"ADD http://127.0.0.1:8000/secret /secret", "has ADD fetch http://127.0.0.1:8000/secret"},
		{"ADD https://example.com/tool.tar.gz /opt/", "fetches it itself, on this machine"},
		{`ADD ["https://example.com/a", "/a"]`, "has ADD fetch https://example.com/a"},
		{"COPY git@github.com:me/repo.git /src", "has COPY fetch git@github.com:me/repo.git"},
		{"FROM localhost:5000/evil AS x", "from localhost:5000"},
		{"COPY --from=127.0.0.1:5000/img /a /b", "from 127.0.0.1:5000"},
		{"FROM 192.168.1.9/base", "from 192.168.1.9"},
	} {
		_, err := reviewOf(t, map[string]string{"Dockerfile": "FROM ${PILOT_BASE}\n" + tc.line + "\n"})
		var refused *RefusedError
		if !errors.As(err, &refused) || refused.Line != 2 || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want refused at line 2 saying %q", tc.line, err, tc.says)
		}
	}
}
