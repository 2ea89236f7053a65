package projectfs

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The agent CLIs a sandbox's image carries (docs/images.md, "Agent
// CLIs"): sandbox.agents in .pilot/settings.json (repository content,
// approved like a Dockerfile) and agents in the user's config.json; and
// caCertificates in config.json, the extra CA files npm trusts while it
// installs them (a machine behind a TLS-intercepting proxy names its
// proxy's CA there).

// Agent CLIs a sandbox's image may carry.
const (
	AgentClaude = "claude"
	AgentCodex  = "codex"
)

// KnownAgents are the agent CLIs there are, in the order they install.
var KnownAgents = []string{AgentClaude, AgentCodex}

// Bounds of caCertificates: how many files, and how large one may be (a
// PEM certificate is 1-3 KiB; a bundle of a few is under this).
const (
	maxCACertificates = 16
	MaxCACertificate  = 64 << 10
)

// AgentList is sandbox.agents as written (raw JSON), checked by
// ReadConfig; a string keeps Config comparable.
type AgentList string

// UnmarshalJSON keeps the value as it is written.
func (a *AgentList) UnmarshalJSON(raw []byte) error {
	*a = AgentList(raw)
	return nil
}

// AgentNames are the agent CLIs the project's settings ask for. Only call
// it on a Config that ReadConfig accepted.
func (c Config) AgentNames() []string {
	if c.Agents == "" {
		return nil
	}
	names, _ := parseAgents(json.RawMessage(c.Agents))
	return names
}

// parseAgents reads a list of agent names, each known and named once, or
// says what is wrong with it.
func parseAgents(raw json.RawMessage) ([]string, string) {
	want := `must be a list of "` + strings.Join(KnownAgents, `", "`) + `", each at most once`
	var names []string
	if json.Unmarshal(raw, &names) != nil || names == nil {
		return nil, fmt.Sprintf("%s; it is %s", want, raw)
	}
	for i, name := range names {
		if !slices.Contains(KnownAgents, name) || slices.Contains(names[:i], name) {
			return nil, fmt.Sprintf("%s; it has %q", want, name)
		}
	}
	return names, ""
}

// agents reads config.json's agents.
func (p *configParser) agents(raw json.RawMessage, dst *[]string) {
	names, reason := parseAgents(raw)
	if reason != "" {
		p.fail("agents", "%s", reason)
		return
	}
	*dst = names
}

// caCertificates reads config.json's caCertificates: absolute paths, each
// once. Whether each is a regular file of bounded size is checked when it
// is read (ReadCACertificate), at the build that needs it.
func (p *configParser) caCertificates(raw json.RawMessage, dst *[]string) {
	want := fmt.Sprintf(`must be a list of at most %d absolute paths of CA certificate files such as "/etc/pki/proxy.crt"`, maxCACertificates)
	var paths []string
	if json.Unmarshal(raw, &paths) != nil || paths == nil || len(paths) > maxCACertificates {
		p.fail("caCertificates", "%s; it is %s", want, raw)
		return
	}
	for i, path := range paths {
		if !filepath.IsAbs(path) || strings.ContainsRune(path, 0) || slices.Contains(paths[:i], path) {
			p.fail("caCertificates", "%s, each once; it has %q", want, path)
			return
		}
	}
	*dst = paths
}

// ReadCACertificates reads the CA certificate files at paths
// (ReadCACertificate), in order.
func ReadCACertificates(paths []string) ([][]byte, error) {
	var out [][]byte
	for _, path := range paths {
		data, err := ReadCACertificate(path)
		if err != nil {
			return nil, err
		}
		out = append(out, data)
	}
	return out, nil
}

// ReadCACertificate reads a CA certificate file that config.json's
// caCertificates names: a regular file (a link to one is followed) of at
// most MaxCACertificate bytes.
func ReadCACertificate(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, bare(err))
	}
	defer f.Close()
	info, err := f.Stat()
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", path, bare(err))
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", path)
	case info.Size() > MaxCACertificate:
		return nil, fmt.Errorf("%s is larger than %d KiB", path, MaxCACertificate>>10)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxCACertificate+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, bare(err))
	}
	if len(data) > MaxCACertificate {
		return nil, fmt.Errorf("%s is larger than %d KiB", path, MaxCACertificate>>10)
	}
	return data, nil
}
