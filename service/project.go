package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	units "github.com/docker/go-units"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/internal/textdiff"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// What a project's own files (.pilot/settings.json, a Dockerfile) ask of
// its sandbox: what needs the user's approval, and the agent tools'
// switch, and which image its sandbox runs (images.Plan).

// A project's .pilot/settings.json and Dockerfile come with its repository,
// which may be a stranger's. What they ask beyond the safe defaults (a
// Dockerfile to build, whose RUN steps run as root with the network; limits
// above the user's caps) is done only once the user approved exactly that
// content: each request has a digest over that content, and the approval
// of a digest is kept in the user's own state (projectfs.Approvals). A
// change of the content changes the digest, and asks again.

// planImage decides the image of the project's new container
// (images.Builder.Plan): a project Dockerfile's build context must be
// approved, as must the agent CLIs its settings add (withAgents).
func (m *Manager) planImage(project string, pc projectfs.Config) (images.Plan, error) {
	plan, err := m.images.Plan(project, pc, m.cfg.DefaultVariant, m.ownImage(project))
	if err != nil {
		return plan, err
	}
	if plan.Project != nil {
		ask, err := dockerfileAsk(project, plan.Project.Context)
		if err != nil {
			return images.Plan{}, err
		}
		if err := m.require(project, ask); err != nil {
			return images.Plan{}, err
		}
	}
	return m.withAgents(project, pc, plan)
}

// withAgents puts on the plan's image the agent CLIs the user's config and
// the project's settings ask for; those the settings add need approval.
func (m *Manager) withAgents(project string, pc projectfs.Config, plan images.Plan) (images.Plan, error) {
	user, _ := m.currentPolicy()
	if a, ok := m.agentsAsk(pc, user); ok {
		if err := m.require(project, a); err != nil {
			return images.Plan{}, err
		}
	}
	agents := images.Agents{Names: append(slices.Clone(user.Agents), pc.AgentNames()...)}
	if len(agents.Names) == 0 {
		return plan, nil
	}
	var err error
	if agents.CA, err = projectfs.ReadCACertificates(user.CACertificates); err != nil {
		return images.Plan{}, &projectfs.ConfigError{File: m.policy.file, Field: "caCertificates", Reason: err.Error()}
	}
	return m.images.WithAgents(plan, agents)
}

// ownImage is the project's own image as the images know it, without its
// build context: one per project of this user's (two users of one engine
// may have a project at the same path: owner.go).
func (m *Manager) ownImage(project string) images.Project {
	return images.Project{
		Tag:    images.ProjectTag(m.cfg.Image, m.containerName(project)),
		Labels: map[string]string{LabelProject: project},
		Scope:  m.cfg.Scope,
	}
}

// ensurePlan makes sure of the plan's images. A project's own image is
// built on the browser image, and its container keeps the browser image's
// user, entrypoint and labels (images.Pinned).
func (m *Manager) ensurePlan(ctx context.Context, project string, plan images.Plan, spec *ContainerSpec) error {
	if err := m.images.EnsurePlan(ctx, plan, m.imageProgress(project)); err != nil {
		return imageErr(err)
	}
	if plan.Project == nil {
		return nil
	}
	pinned, err := m.images.Pinned(ctx)
	if err != nil {
		return err
	}
	maps.Copy(spec.Labels, pinned)
	spec.User, _ = desktopUserOf(Container{Labels: pinned})
	spec.Entrypoint = []string{images.Entrypoint}
	return nil
}

// Kinds of approval (docs/protocol.md, "Repository content needs the
// user's approval"); ApprovalNetwork is in network.go.
const (
	ApprovalDockerfile = "dockerfile"
	ApprovalLimits     = "limits"
	ApprovalAgents     = "agents"
)

// Approval is one thing the project asks the user: what it is, in plain
// words, the digest of exactly the content it covers, and, for the user
// to read before saying yes (docs/protocol.md, "Approvals show what they
// approve"), that content as text (the Dockerfile, the limits against the
// caps, the network rules asked), the files a Dockerfile takes, what
// changed since the kind was last approved, and what in it reaches beyond
// the project. Every kind
// fills Content; the rest where it has any.
type Approval struct {
	Kind     string             `json:"kind"`
	Summary  string             `json:"summary"`
	Digest   string             `json:"digest"`
	Content  string             `json:"content,omitempty"`
	Files    []images.ShownFile `json:"files,omitempty"`
	Diff     string             `json:"diff,omitempty"`
	Warnings []string           `json:"warnings,omitempty"`
}

// document is the approval's content as one text, for the diff: Content,
// then each file under a header of its own.
func (a Approval) document() string {
	var b strings.Builder
	b.WriteString(a.Content)
	for _, f := range a.Files {
		fmt.Fprintf(&b, "\n==> %s (%d bytes) <==\n", f.Path, f.Size)
		if f.Omitted != "" {
			fmt.Fprintf(&b, "(not shown: %s)\n", f.Omitted)
		}
		b.WriteString(f.Text)
	}
	return b.String()
}

// withDiff is a with Diff against the content the user approved last for
// its kind, when there is one: nothing when the content was not kept.
func (m *Manager) withDiff(project string, a Approval) Approval {
	last, ok := m.approvals.Last(project, a.Kind)
	if ok && last.Content != "" {
		a.Diff = textdiff.Unified(last.Content, a.document(), "approved", "asked now")
	}
	return a
}

// ApprovalError is a start that waits for the user's approval
// (ErrNeedsApproval).
type ApprovalError struct {
	Project  string
	Approval Approval
}

func (e *ApprovalError) Error() string {
	return fmt.Sprintf("the project asks to %s: this needs your approval (sandbox/approve, or pilot-sandbox approve --project %s)",
		e.Approval.Summary, e.Project)
}

func (e *ApprovalError) Unwrap() error { return ErrNeedsApproval }

// Pending is what the project's settings ask now that the user has not
// approved, in the order a start asks it: the limits, the network, the
// Dockerfile, then the agent CLIs.
func (m *Manager) Pending(ctx context.Context, path string) ([]Approval, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return nil, err
	}
	asks, err := m.asks(project)
	if err != nil {
		return nil, err
	}
	var pending []Approval
	for _, a := range asks {
		if !m.approvals.Approved(project, a.Kind, a.Digest) {
			pending = append(pending, m.withDiff(project, a))
		}
	}
	return pending, nil
}

// Approve records the user's approval of what the project asks now, named
// by its digest. A digest that is not one the project asks now (its
// content changed, or it was never asked) is an ArgumentError, and
// nothing is recorded.
func (m *Manager) Approve(ctx context.Context, path, digest string) error {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return err
	}
	asks, err := m.asks(project)
	if err != nil {
		return err
	}
	var now []string
	for _, a := range asks {
		if a.Digest == digest {
			ap := projectfs.Approval{Kind: a.Kind, Digest: a.Digest, Summary: a.Summary, Content: a.document()}
			if err := m.approvals.Approve(project, ap, m.cfg.Now()); err != nil {
				return err
			}
			m.log.Info().Str("project", project).Str("kind", a.Kind).Str("digest", digest).Msg("the user approved: " + a.Summary)
			return nil
		}
		now = append(now, a.Kind+" "+a.Digest)
	}
	reason := "is not what the project asks now: it asks for nothing that needs approval"
	if len(now) > 0 {
		reason = "is not what the project asks now (its content changed, or it never asked it); it asks: " + strings.Join(now, ", ")
	}
	return &ArgumentError{Name: "digest", Reason: reason}
}

// asks is everything the project's settings ask that needs approval,
// approved or not, in the order a start checks them.
func (m *Manager) asks(project string) ([]Approval, error) {
	pc, err := projectfs.ReadConfig(project)
	if err != nil {
		return nil, err
	}
	var asks []Approval
	if a, ok := limitsAsk(pc, m.caps()); ok {
		asks = append(asks, a)
	}
	if user, err := m.UserNetwork(); err == nil && !user.None && !pc.NetworkNone() {
		if a, ok := networkAsk(pc, user); ok {
			asks = append(asks, a)
		}
	}
	if df := pc.ImageDockerfile(); df != "" {
		bc, err := projectfs.ReadBuildContext(project, df)
		if err != nil {
			return nil, err
		}
		a, err := dockerfileAsk(project, bc)
		if err != nil {
			return nil, err
		}
		asks = append(asks, a)
	}
	user, _ := m.currentPolicy()
	if a, ok := m.agentsAsk(pc, user); ok {
		asks = append(asks, a)
	}
	return asks, nil
}

// require fails with an ApprovalError unless the user approved a.
func (m *Manager) require(project string, a Approval) error {
	if m.approvals.Approved(project, a.Kind, a.Digest) {
		return nil
	}
	return &ApprovalError{Project: project, Approval: m.withDiff(project, a)}
}

// caps are the user's caps in force.
func (m *Manager) caps() projectfs.Caps {
	cfg, _ := m.currentPolicy()
	return cfg.Caps
}

// dockerfileAsk is the approval a project Dockerfile needs, showing its
// text, the files it takes and its warnings. One the sidecar does not
// build at all (images.RefusedError) is a ConfigError naming
// sandbox.image.
func dockerfileAsk(project string, bc projectfs.BuildContext) (Approval, error) {
	r, err := images.ReviewContext(bc)
	var refused *images.RefusedError
	if errors.As(err, &refused) {
		return Approval{}, &projectfs.ConfigError{File: projectfs.SettingsFile(project), Field: "sandbox.image",
			Reason: fmt.Sprintf("names the Dockerfile %s, which is not built: %v", bc.Dockerfile, refused)}
	}
	if err != nil {
		return Approval{}, err
	}
	return Approval{
		Kind: ApprovalDockerfile, Summary: images.Summary(bc), Digest: bc.Digest,
		Content: r.Dockerfile, Files: r.Files, Warnings: r.Warnings,
	}, nil
}

// agentsAsk is the approval the agent CLIs the project's settings add to
// the user's config need, if any, naming each one's package and version.
func (m *Manager) agentsAsk(pc projectfs.Config, user projectfs.UserConfig) (Approval, bool) {
	var names []string
	for _, name := range pc.AgentNames() {
		if !slices.Contains(user.Agents, name) {
			names = append(names, name)
		}
	}
	packages := m.images.AgentPackages(names)
	if len(packages) == 0 {
		return Approval{}, false
	}
	content := strings.Join(packages, "\n") + "\n"
	sum := sha256.Sum256([]byte("agents\x00" + content))
	return Approval{
		Kind: ApprovalAgents, Digest: "sha256:" + hex.EncodeToString(sum[:]), Content: content,
		Summary: "install the agent CLIs " + strings.Join(packages, ", ") +
			" from the npm registry into its image; their install scripts run as root with network access",
	}, true
}

// limitsAsk is the approval the project's limits above caps need, if any:
// its summary and digest cover those limits only, as asked.
func limitsAsk(pc projectfs.Config, caps projectfs.Caps) (Approval, bool) {
	var said, hashed, content []string
	over := func(name, asked, capText, value string) {
		said = append(said, fmt.Sprintf("%s %s (your cap %s)", name, asked, capText))
		hashed = append(hashed, name+"="+value)
		content = append(content, fmt.Sprintf("%-10s %-8s your cap: %s", name, asked, capText))
	}
	size := func(n int64) string { return units.BytesSize(float64(n)) }
	if pc.Memory != nil {
		if n, _ := projectfs.ParseSize(*pc.Memory); n > caps.MemoryBytes {
			over("memory", *pc.Memory, size(caps.MemoryBytes), strconv.FormatInt(n, 10))
		}
	}
	if pc.CPUs != nil && *pc.CPUs > caps.CPUs {
		v := strconv.FormatFloat(*pc.CPUs, 'g', -1, 64)
		over("cpus", v, strconv.FormatFloat(caps.CPUs, 'g', -1, 64), v)
	}
	if pc.Processes != nil && *pc.Processes > caps.Processes {
		v := strconv.FormatInt(*pc.Processes, 10)
		over("processes", v, strconv.FormatInt(caps.Processes, 10), v)
	}
	if pc.ShmSize != nil {
		if n, _ := projectfs.ParseSize(*pc.ShmSize); n > caps.ShmBytes {
			over("shmSize", *pc.ShmSize, size(caps.ShmBytes), strconv.FormatInt(n, 10))
		}
	}
	if len(said) == 0 {
		return Approval{}, false
	}
	sum := sha256.Sum256([]byte("limits\x00" + strings.Join(hashed, "\x00")))
	return Approval{
		Kind:    ApprovalLimits,
		Summary: "run its sandbox with " + strings.Join(said, ", "),
		Digest:  "sha256:" + hex.EncodeToString(sum[:]),
		Content: strings.Join(content, "\n") + "\n",
	}, true
}

// The agent tools are switched on per project, in .pilot/settings.json,
// which the desktop app writes too.

// ToolsEnabled reads the project's agent-tools switch (dockerToolsEnabled in
// .pilot/settings.json; off unless set). A settings file that cannot be read
// or is not a JSON object reads as off and is reported (a warning event),
// but left alone: it belongs to the desktop app too, which may be in the
// middle of writing it.
func (m *Manager) ToolsEnabled(path string) (bool, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return false, err
	}
	b := m.box(project)
	doc, err := projectfs.ReadSettings(project)
	var fe *projectfs.FileError
	if errors.As(err, &fe) {
		fe.Effect = "agent tools count as off until it is fixed"
		m.warn(b, fe.Path, fe)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	m.warn(b, projectfs.SettingsFile(project), nil)
	return doc.Bool(projectfs.ToolsKey), nil
}

// SetToolsEnabled switches the project's agent tools on or off, keeping every
// other setting in the file as it was. A file that could not be read is set
// aside (and reported) first; one that cannot be written is a projectfs.FileError and
// stays as it was.
func (m *Manager) SetToolsEnabled(path string, enabled bool) (bool, error) {
	project, err := projectfs.Canonical(path)
	if err != nil {
		return false, err
	}
	b := m.box(project)
	b.settingsMu.Lock()
	defer b.settingsMu.Unlock()
	aside, err := projectfs.WriteSettingsBool(project, projectfs.ToolsKey, enabled, m.cfg.Now())
	if aside != nil {
		m.warn(b, projectfs.SettingsFile(project), aside)
	}
	if err != nil {
		return false, err
	}
	return enabled, nil
}
