package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	units "github.com/docker/go-units"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// What a project's own files (.pilot/settings.json, a Dockerfile) ask of
// its sandbox: what needs the user's approval, its image, and the agent
// tools' switch.

// A project's .pilot/settings.json and Dockerfile come with its repository,
// which may be a stranger's. What they ask beyond the safe defaults (a
// Dockerfile to build, whose RUN steps run as root with the network; limits
// above the user's caps) is done only once the user approved exactly that
// content: each request has a digest over that content, and the approval
// of a digest is kept in the user's own state (projectfs.Approvals). A
// change of the content changes the digest, and asks again.

// Kinds of approval (docs/protocol.md, "Repository content needs the
// user's approval"); ApprovalNetwork is in network.go.
const (
	ApprovalDockerfile = "dockerfile"
	ApprovalLimits     = "limits"
)

// Approval is one thing the project asks the user: what it is, in plain
// words, the digest of exactly the content it covers, and that content as
// text where it is not a file of the project (the network rules asked).
type Approval struct {
	Kind    string `json:"kind"`
	Summary string `json:"summary"`
	Digest  string `json:"digest"`
	Content string `json:"content,omitempty"`
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
// approved, in the order a start asks it: the limits, the network, then
// the Dockerfile.
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
			pending = append(pending, a)
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
			ap := projectfs.Approval{Kind: a.Kind, Digest: a.Digest, Summary: a.Summary}
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
		asks = append(asks, dockerfileAsk(bc))
	}
	return asks, nil
}

// require fails with an ApprovalError unless the user approved a.
func (m *Manager) require(project string, a Approval) error {
	if m.approvals.Approved(project, a.Kind, a.Digest) {
		return nil
	}
	return &ApprovalError{Project: project, Approval: a}
}

// caps are the user's caps in force.
func (m *Manager) caps() projectfs.Caps {
	cfg, _ := m.currentPolicy()
	return cfg.Caps
}

// dockerfileAsk is the approval a project Dockerfile needs.
func dockerfileAsk(bc projectfs.BuildContext) Approval {
	return Approval{Kind: ApprovalDockerfile, Summary: images.Summary(bc), Digest: bc.Digest}
}

// limitsAsk is the approval the project's limits above caps need, if any:
// its summary and digest cover those limits only, as asked.
func limitsAsk(pc projectfs.Config, caps projectfs.Caps) (Approval, bool) {
	var said, hashed []string
	over := func(name, asked, capText, value string) {
		said = append(said, fmt.Sprintf("%s %s (your cap %s)", name, asked, capText))
		hashed = append(hashed, name+"="+value)
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
	}, true
}

// A project's sandbox runs a variant of the sidecar's images
// (sandbox.image "desktop" or "browser"), or its own image, built from its
// Dockerfile on the browser image once the user approved it (package
// images builds it). Its container keeps the desktop's user, entrypoint
// and labels whatever the Dockerfile set.

// desktopEntrypoint is the desktop images' entrypoint, which a project's
// own image runs whatever its Dockerfile sets.
const desktopEntrypoint = "/usr/local/bin/pilot-desktop"

// pinnedLabels are the labels of the browser image a project's container
// keeps whatever the project's Dockerfile set: they say which user runs the
// desktop, where its VNC passwords go, which viewer page is the sidecar's,
// and that it has a browser.
var pinnedLabels = []string{LabelDesktopUser, LabelVNCDir, LabelViewer, LabelBrowser}

// ProjectTag is the tag of a project's own image: one per project, on the
// desktop image's repository (pilot-sandbox:latest ->
// pilot-sandbox-project:NAME-HASH); an empty desktopImage is
// images.DefaultTag, as in Config. It is the tag of a sandbox without an
// owner (owner.go); a manager with one uses its projectTag.
func ProjectTag(desktopImage, project string) string {
	return projectTag(desktopImage, ContainerName(project))
}

// projectTag is the tag of the project's own image of this user's (two
// users of one engine may have a project at the same path: owner.go).
func (m *Manager) projectTag(project string) string {
	return projectTag(m.cfg.Image, m.containerName(project))
}

// projectTag is ProjectTag for the sandbox container of that name.
func projectTag(desktopImage, container string) string {
	if desktopImage == "" {
		desktopImage = images.DefaultTag
	}
	repo := desktopImage
	if i := strings.LastIndex(desktopImage, ":"); i > strings.LastIndex(desktopImage, "/") {
		repo = desktopImage[:i]
	}
	return repo + "-project:" + strings.TrimPrefix(container, "pilot-sandbox-")
}

// EnsureImage builds the default variant's images unless images with this
// binary's build hashes exist, reporting progress for project (which may
// be "").
func (m *Manager) EnsureImage(ctx context.Context, project string) error {
	return imageErr(m.images.Ensure(ctx, m.cfg.DefaultVariant, m.imageProgress(project)))
}

// imageProgress reports the images' steps as the project's progress.
func (m *Manager) imageProgress(project string) images.Report {
	return func(msg string, current, total int) { m.progress(project, StageImage, msg, current, total) }
}

// rebuildAfter is the policy's age past which an image is rebuilt.
func (m *Manager) rebuildAfter() time.Duration {
	policy, _ := m.currentPolicy()
	return policy.RebuildAfter
}

// imagePlan is the image a new container needs: a variant of the
// sidecar's, or the project's own from its build context.
type imagePlan struct {
	variant, tag string
	context      *projectfs.BuildContext // images.VariantProject only
}

// planImage decides the image of the project's new container. A project
// Dockerfile is read (its context packed) and must be approved.
func (m *Manager) planImage(project string, pc projectfs.Config) (imagePlan, error) {
	df := pc.ImageDockerfile()
	if df == "" {
		variant := m.cfg.DefaultVariant
		if v := pc.ImageVariant(); v != "" {
			variant = v
		}
		return imagePlan{variant: variant, tag: m.images.Tag(variant)}, nil
	}
	if !m.images.HasBrowser() {
		return imagePlan{}, fmt.Errorf("%w: this sidecar has no browser image for a project Dockerfile to build on", ErrNoBrowser)
	}
	bc, err := projectfs.ReadBuildContext(project, df)
	if err != nil {
		return imagePlan{}, err
	}
	if err := m.require(project, dockerfileAsk(bc)); err != nil {
		return imagePlan{}, err
	}
	return imagePlan{variant: images.VariantProject, tag: m.projectTag(project), context: &bc}, nil
}

// projectImage is the project's own image as the images know it.
func (m *Manager) projectImage(project string, bc projectfs.BuildContext) images.Project {
	return images.Project{Tag: m.projectTag(project), Context: bc, Labels: map[string]string{LabelProject: project}}
}

// ensurePlan makes sure of the plan's images. A project's own image is
// built on the browser image, and its container keeps the browser image's
// user, entrypoint and labels.
func (m *Manager) ensurePlan(ctx context.Context, project string, plan imagePlan, spec *ContainerSpec) error {
	if plan.variant != images.VariantProject {
		return imageErr(m.images.Ensure(ctx, plan.variant, m.imageProgress(project)))
	}
	if err := m.images.EnsureProject(ctx, m.projectImage(project, *plan.context), m.imageProgress(project)); err != nil {
		return imageErr(err)
	}
	base, err := m.docker.ImageLabels(ctx, m.cfg.BrowserImage)
	if err != nil {
		return fmt.Errorf("inspect image %s: %w", m.cfg.BrowserImage, err)
	}
	for _, key := range pinnedLabels {
		// Set even when the base has none (""), so that the project's
		// Dockerfile cannot add it either.
		spec.Labels[key] = base[key]
	}
	spec.User, _ = desktopUserOf(Container{Labels: base})
	spec.Entrypoint = []string{desktopEntrypoint}
	return nil
}

// removeProjectImage deletes the project's own image, if it has one, with
// its sandbox: nothing else uses it.
func (m *Manager) removeProjectImage(ctx context.Context, project string) {
	p := m.projectImage(project, projectfs.BuildContext{})
	removed, err := m.images.RemoveProject(ctx, p)
	switch {
	case err != nil:
		m.log.Warn().Err(err).Str("image", p.Tag).Msg("could not remove the project's image")
	case removed:
		m.log.Info().Str("project", project).Str("image", p.Tag).Msg("removed the project's image")
	}
}

// noteImageChange says, in the start's progress, when the project's
// Dockerfile (or its context) changed since its sandbox was made: the
// image applies to a new sandbox, as every sandbox.image does.
func (m *Manager) noteImageChange(ctx context.Context, b *box, pc projectfs.Config, c Container) {
	df := pc.ImageDockerfile()
	if df == "" || c.Image != m.projectTag(b.project) {
		return
	}
	labels, err := m.docker.ImageLabels(ctx, c.Image)
	if err != nil {
		return
	}
	bc, err := projectfs.ReadBuildContext(b.project, df)
	if err == nil && bc.Digest == labels[images.LabelContext] {
		return
	}
	m.progress(b.project, StageStart, fmt.Sprintf("%s changed since this sandbox was made: it applies to a new sandbox; "+
		"remove the sandbox (its files go with it) to build and use it", df), 0, 0)
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
