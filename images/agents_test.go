package images

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/resources"
)

// tarFiles are the files of a build context, by name.
func tarFiles(t *testing.T, data []byte) map[string]string {
	t.Helper()
	files := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		files[hdr.Name] = string(body)
	}
}

// The layer is planned on the variant's image with the CLIs asked, in the
// Dockerfile's order, and the CA files in its context; it is built after
// the image below, once, and again when that image is rebuilt.
func TestAgentsLayer(t *testing.T) {
	f := newFakeEngine()
	b := newBuilder(t, f, func(c *Config) { c.AgentsResources = resources.AgentsImage() })
	if got := b.AgentPackages([]string{"codex", "claude"}); !slices.Equal(got, []string{"@anthropic-ai/claude-code@2.0.14", "@openai/codex@0.171.0"}) {
		t.Fatalf("AgentPackages = %q, want the Dockerfile's pins in its order", got)
	}
	if got := slices.Sorted(maps.Keys(agentCLIs)); !slices.Equal(got, projectfs.KnownAgents) {
		t.Fatalf("the layer installs %q, the settings know %q", got, projectfs.KnownAgents)
	}
	base := Plan{Variant: VariantDesktop, Tag: b.Tag(VariantDesktop)}
	if p, err := b.WithAgents(base, Agents{}); err != nil || p != base {
		t.Fatalf("no CLIs: %+v, %v; want the plan as it was", p, err)
	}
	ca := []byte("-----BEGIN CERTIFICATE-----\n")
	plan, err := b.WithAgents(base, Agents{Names: []string{"codex", "claude"}, CA: [][]byte{ca}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(plan.Tag, "pilot-sandbox-agents:") || plan.Variant != VariantDesktop {
		t.Fatalf("plan = %+v, want the layer's tag on the desktop variant", plan)
	}
	if err := b.EnsurePlan(context.Background(), plan, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.builds) != 2 || f.builds[0].Tag != base.Tag || f.builds[1].Tag != plan.Tag {
		t.Fatalf("builds %d, want the desktop image then the layer", len(f.builds))
	}
	layer := f.builds[1]
	want := map[string]string{"PILOT_BASE": base.Tag, "INSTALL_CLAUDE": "1", "INSTALL_CODEX": "1"}
	if !maps.Equal(layer.BuildArgs, want) {
		t.Errorf("build args %v, want %v", layer.BuildArgs, want)
	}
	if files := tarFiles(t, plan.Agents.context); files["ca/00.crt"] != string(ca) || files["install-cli.sh"] == "" {
		t.Errorf("context files %v, want the CA file and install-cli.sh", slices.Sorted(maps.Keys(files)))
	}
	if got := layer.Labels[LabelAgents]; got != "@anthropic-ai/claude-code@2.0.14 @openai/codex@0.171.0" {
		t.Errorf("label %s = %q", LabelAgents, got)
	}

	if err := b.EnsurePlan(context.Background(), plan, nil); err != nil || len(f.builds) != 2 {
		t.Fatalf("again: %v, %d builds; want none more", err, len(f.builds)-2)
	}
	f.images[base.Tag][LabelBuilt] = "2030-01-01T00:00:00Z" // the desktop image rebuilt for its age
	if err := b.EnsurePlan(context.Background(), plan, nil); err != nil || len(f.builds) != 3 || f.builds[2].Tag != plan.Tag {
		t.Fatalf("after the image below was rebuilt: %v, %d builds; want the layer rebuilt", err, len(f.builds))
	}

	one, _ := b.WithAgents(base, Agents{Names: []string{"claude"}})
	other, _ := b.WithAgents(base, Agents{Names: []string{"claude"}, CA: [][]byte{[]byte("another")}})
	if one.Tag == plan.Tag || one.Tag == other.Tag {
		t.Errorf("tags %s, %s, %s: want a tag of each set of CLIs and CA files", plan.Tag, one.Tag, other.Tag)
	}
	if _, ok := one.Agents.args["INSTALL_CODEX"]; ok {
		t.Errorf("claude alone asks codex too: %v", one.Agents.args)
	}
}

// A sidecar without the layer's resources says so rather than run a
// sandbox without the CLIs asked.
func TestAgentsLayerMissing(t *testing.T) {
	b := newBuilder(t, newFakeEngine(), nil)
	_, err := b.WithAgents(Plan{Variant: VariantDesktop, Tag: b.Tag(VariantDesktop)}, Agents{Names: []string{"claude"}})
	if err == nil || !strings.Contains(err.Error(), "no agent CLIs' layer") {
		t.Fatalf("err = %v, want one saying there is no layer", err)
	}
}

// On a project's own image the layer builds on that image, in the
// sandboxes' network as the project's build does, after it.
func TestAgentsLayerOnAProjectImage(t *testing.T) {
	f := newFakeEngine()
	b := newBuilder(t, f, func(c *Config) { c.BrowserResources, c.AgentsResources = browserLayer, resources.AgentsImage() })
	project := dockerfileProject(t, "ARG PILOT_BASE\nFROM ${PILOT_BASE}\n")
	own := Project{Tag: "pilot-sandbox-project:web", Labels: map[string]string{"pilot.project": project}, Scope: "test"}
	plan, err := b.Plan(project, projectfs.Config{Image: `{"dockerfile": ".pilot/Dockerfile"}`}, VariantDesktop, own)
	if err != nil {
		t.Fatal(err)
	}
	if plan, err = b.WithAgents(plan, Agents{Names: []string{"claude"}}); err != nil {
		t.Fatal(err)
	}
	if err := b.EnsurePlan(context.Background(), plan, nil); err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, spec := range f.builds {
		tags = append(tags, spec.Tag)
	}
	layer := f.builds[len(f.builds)-1]
	if len(tags) < 2 || tags[len(tags)-2] != own.Tag || layer.Tag != plan.Tag ||
		layer.BuildArgs["PILOT_BASE"] != own.Tag || layer.SandboxScope != "test" {
		t.Fatalf("builds %q; the layer's args %v, scope %q", tags, layer.BuildArgs, layer.SandboxScope)
	}
}

// A layer supersedes the layers of the same CLIs on the same image under
// another tag (an older sidecar's, a base since changed): they are
// removed once it is there. Another set of CLIs, or another image below,
// is kept.
func TestAgentsLayerRemovesTheOnesItSupersedes(t *testing.T) {
	f := newFakeEngine()
	b := newBuilder(t, f, func(c *Config) { c.AgentsResources = resources.AgentsImage() })
	base := Plan{Variant: VariantDesktop, Tag: b.Tag(VariantDesktop)}
	plan, err := b.WithAgents(base, Agents{Names: []string{"claude"}})
	if err != nil {
		t.Fatal(err)
	}
	on := base.Tag + " @anthropic-ai/claude-code@2.0.14"
	f.images["pilot-sandbox-agents:older"] = map[string]string{LabelAgentsOn: on}
	f.images["pilot-sandbox-agents:both"] = map[string]string{LabelAgentsOn: on + " @openai/codex@0.171.0"}
	f.images["pilot-sandbox-agents:elsewhere"] = map[string]string{LabelAgentsOn: "pilot-sandbox-browser:latest @anthropic-ai/claude-code@2.0.14"}
	if err := b.EnsurePlan(context.Background(), plan, nil); err != nil {
		t.Fatal(err)
	}
	if got := f.images[plan.Tag][LabelAgentsOn]; got != on {
		t.Errorf("the layer's %s = %q, want %q", LabelAgentsOn, got, on)
	}
	var left []string
	for tag := range f.images {
		if strings.HasPrefix(tag, "pilot-sandbox-agents:") {
			left = append(left, strings.TrimPrefix(tag, "pilot-sandbox-agents:"))
		}
	}
	slices.Sort(left)
	want := []string{"both", "elsewhere", strings.TrimPrefix(plan.Tag, "pilot-sandbox-agents:")}
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("layers left %q, want %q", left, want)
	}
}
