package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// The agent CLIs' layer (docs/images.md, "Agent CLIs in the image"): the
// CLIs a project's settings or the user's config ask for (sandbox.agents,
// agents), installed from the npm registry on the plan's image, pinned by
// the layer's Dockerfile (resources/docker/agents). It is tagged by a hash
// of the image below's build hash, its context, the CLIs and the CA files,
// so one set of CLIs on one image is built once and reused; its build
// hash adds when the image below was built, so a rebuild of that image
// (for its age) rebuilds the layer on it.

// agentCLI is how the layer's Dockerfile installs one agent CLI: the ARG
// pinning its package, and the ARG that asks for it.
type agentCLI struct{ pin, install string }

// agentCLIs are the CLIs there are (projectfs.KnownAgents), in the order
// the Dockerfile installs them.
var agentCLIs = map[string]agentCLI{
	"claude": {pin: "CLAUDE_PACKAGE", install: "INSTALL_CLAUDE"},
	"codex":  {pin: "CODEX_PACKAGE", install: "INSTALL_CODEX"},
}

// pinLine matches the Dockerfile's "ARG CLAUDE_PACKAGE=@scope/name@1.2.3".
var pinLine = regexp.MustCompile(`(?m)^ARG ([A-Z_]+_PACKAGE)=(\S+)$`)

// Agents are the agent CLIs a plan's image carries: their names
// (projectfs.KnownAgents) and the extra CA certificates npm trusts while
// it installs them (config.json's caCertificates, read).
type Agents struct {
	Names []string
	CA    [][]byte
}

// agentsLayer is the layer a plan adds: the image it builds on, the
// build's context and arguments, a hash of them and of the image below's
// build hash, the sandboxes' scope whose network a project image's layer
// builds in (as the project's own build does), and the packages.
type agentsLayer struct {
	base     string
	context  []byte
	args     map[string]string
	hash     string
	scope    string
	packages []string
}

// AgentPackages are the npm packages, pinned, of the named CLIs
// ("claude" -> "@anthropic-ai/claude-code@2.0.14"), in the layer's order;
// a name it does not know is left out, and all are without the layer.
func (b *Builder) AgentPackages(names []string) []string {
	var out []string
	for _, name := range b.agentOrder(names) {
		if pin := b.agentPins[agentCLIs[name].pin]; pin != "" {
			out = append(out, pin)
		}
	}
	return out
}

// agentOrder is names, known ones only, once each, in the layer's order.
func (b *Builder) agentOrder(names []string) []string {
	var out []string
	for _, name := range projectfs.KnownAgents {
		if slices.Contains(names, name) {
			out = append(out, name)
		}
	}
	return out
}

// WithAgents is p with the agent CLIs' layer on its image: its Tag the
// layer's. No CLIs is p as it is.
func (b *Builder) WithAgents(p Plan, a Agents) (Plan, error) {
	names := b.agentOrder(a.Names)
	if len(names) == 0 {
		return p, nil
	}
	if b.agentPins == nil {
		return Plan{}, fmt.Errorf("this sidecar has no agent CLIs' layer to build (%s)", strings.Join(names, ", "))
	}
	cas := map[string][]byte{}
	for i, ca := range a.CA {
		cas[fmt.Sprintf("ca/%02d.crt", i)] = ca
	}
	l := agentsLayer{base: p.Tag, args: map[string]string{"PILOT_BASE": p.Tag}}
	baseHash := b.Hash(p.Variant)
	if p.Project != nil {
		baseHash, l.scope = b.project(*p.Project).build.Hash, p.Project.Scope
	}
	for _, name := range names {
		l.args[agentCLIs[name].install] = "1"
	}
	bc, err := newBuildContextWith(b.cfg.AgentsResources, cas, l.args)
	if err != nil {
		return Plan{}, fmt.Errorf("read the agent CLIs' layer: %w", err)
	}
	l.context, l.packages = bc.Tar, b.AgentPackages(names)
	l.hash = bc.on(baseHash).Hash
	repo, _ := splitTag(b.cfg.Tag)
	p.Tag, p.Agents = repo+"-agents:"+l.hash, &l
	return p, nil
}

// readAgentPins reads the layer's pins (its ARG lines naming a package),
// by their ARG's name; an error when a CLI has none.
func readAgentPins(files fs.FS) (map[string]string, error) {
	data, err := fs.ReadFile(files, "Dockerfile")
	if err != nil {
		return nil, err
	}
	pins := map[string]string{}
	for _, m := range pinLine.FindAllSubmatch(data, -1) {
		pins[string(m[1])] = string(m[2])
	}
	for name, cli := range agentCLIs {
		if pins[cli.pin] == "" {
			return nil, fmt.Errorf("its Dockerfile pins no package for %s (ARG %s=PACKAGE@VERSION)", name, cli.pin)
		}
	}
	return pins, nil
}

// ensureAgents makes sure of the layer, once the image below is: its
// build hash adds when that image was built. b.mu is not held.
func (b *Builder) ensureAgents(ctx context.Context, tag string, l agentsLayer, report Report) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	labels, err := b.engine.ImageLabels(ctx, l.base)
	if err != nil {
		return fmt.Errorf("inspect image %s: %w", l.base, err)
	}
	sum := sha256.Sum256([]byte(l.hash + "\x00" + labels[LabelBuilt]))
	on := l.base + " " + strings.Join(l.packages, " ")
	err = b.ensureOne(ctx, image{
		tag:          tag,
		build:        buildContext{Tar: l.context, Hash: hex.EncodeToString(sum[:])[:16]},
		args:         l.args,
		labels:       map[string]string{LabelAgents: strings.Join(l.packages, " "), LabelAgentsOn: on},
		sandboxScope: l.scope,
	}, report)
	if err == nil {
		b.pruneAgents(ctx, tag, on)
	}
	return err
}

// pruneAgents removes the layers tag supersedes: the same CLIs on the
// same image, tagged by an earlier hash (a rebuilt base, another pin, an
// older sidecar's layer files), so that each change does not leave a
// layer of hundreds of MB behind. The engine refuses to remove one a
// container still uses (a stopped sandbox's too): that one stays until
// the sandbox is removed, and goes at a later build. Best effort.
func (b *Builder) pruneAgents(ctx context.Context, tag, on string) {
	tags, err := b.engine.ImageTags(ctx, LabelAgentsOn, on)
	if err != nil {
		b.log.Debug().Err(err).Msg("list the agent CLIs' layers")
		return
	}
	for _, old := range tags {
		if old == tag {
			continue
		}
		if err := b.engine.RemoveImage(ctx, old); err != nil {
			b.log.Debug().Err(err).Str("image", old).Msg("keep a superseded agent CLIs' layer")
			continue
		}
		b.log.Info().Str("image", old).Str("by", tag).Msg("removed a superseded agent CLIs' layer")
	}
}
