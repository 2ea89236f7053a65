package projectfs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	units "github.com/docker/go-units"

	"github.com/pilot-sandbox/pilot-sandbox/netpolicy"
)

// Config is the "sandbox" object of .pilot/settings.json: how the
// project wants its sandbox made. Every field is optional; a missing one
// takes the sidecar's default.
//
//	{"sandbox": {"memory": "4g", "cpus": 1.5, "processes": 2048,
//	             "shmSize": "2g", "display": {"width": 1920, "height": 1080}}}
//
// Memory, CPUs and processes apply at every start of the sandbox; the
// display and shmSize only when its container is created.
type Config struct {
	// Memory is the memory limit, swap included, in `docker run --memory`
	// syntax: "512m", "4g", "1.5GiB".
	Memory *string `json:"memory,omitempty"`
	// CPUs is how many CPUs' worth of time the sandbox may use.
	CPUs *float64 `json:"cpus,omitempty"`
	// Processes caps the processes and threads running in the sandbox.
	Processes *int64 `json:"processes,omitempty"`
	// ShmSize is the size of /dev/shm, which browsers use heavily.
	ShmSize *string  `json:"shmSize,omitempty"`
	Display *Display `json:"display,omitempty"`
	// Image is the image variant: "browser", "desktop" or "dev"
	// (docs/images.md), or the project's own Dockerfile ({"dockerfile": PATH}),
	// which is built only once the user approved it (ReadBuildContext).
	Image ImageChoice `json:"image,omitempty"`
	// Network is the repository's network policy: "none" (no network at
	// all), or an object that narrows the user's policy (deny, a stricter
	// preset) and may ask to widen it, which needs the user's approval
	// (netpolicy.Repository). Checked by ReadConfig.
	Network NetworkChoice `json:"network,omitempty"`
	// Agents are the agent CLIs the sandbox's image carries ("claude",
	// "codex"; agents.go), installed by a layer once the user approved
	// them. Checked by ReadConfig.
	Agents AgentList `json:"agents,omitempty"`
}

// NetworkChoice is sandbox.network as written (raw JSON), checked by
// ReadConfig; a string keeps Config comparable.
type NetworkChoice string

// UnmarshalJSON keeps the value as it is written.
func (c *NetworkChoice) UnmarshalJSON(raw []byte) error {
	*c = NetworkChoice(raw)
	return nil
}

// ImageChoice is sandbox.image as written (raw JSON), checked by
// ReadConfig; a string keeps Config comparable.
type ImageChoice string

// UnmarshalJSON keeps the value as it is written.
func (c *ImageChoice) UnmarshalJSON(raw []byte) error {
	*c = ImageChoice(raw)
	return nil
}

// Image variants a project may name.
const (
	ImageBrowser = "browser"
	ImageDesktop = "desktop"
	ImageDev     = "dev"
)

// ImageVariant is the variant the project names, or "" for the default.
// Only call it on a Config that ReadConfig accepted.
func (c Config) ImageVariant() string {
	var v string
	if json.Unmarshal([]byte(c.Image), &v) != nil {
		return ""
	}
	return v
}

// ImageDockerfile is the project Dockerfile's path relative to the
// project ("" when sandbox.image names a variant). Only call it on a
// Config that ReadConfig accepted.
func (c Config) ImageDockerfile() string {
	var obj struct {
		Dockerfile string `json:"dockerfile"`
	}
	if json.Unmarshal([]byte(c.Image), &obj) != nil {
		return ""
	}
	return obj.Dockerfile
}

// NetworkNone says whether the project asks for no network.
func (c Config) NetworkNone() bool { return c.NetworkPolicy().None }

// NetworkPolicy is the project's network policy (none when it names
// none). Only call it on a Config that ReadConfig accepted.
func (c Config) NetworkPolicy() netpolicy.Repository {
	if c.Network == "" {
		return netpolicy.Repository{}
	}
	r, _ := netpolicy.ParseRepository(json.RawMessage(c.Network))
	return r
}

// NetworkNone is the one value of sandbox.network (and of config.json's
// network): no network at all.
const NetworkNone = "none"

const wantImage = `must be "browser", "desktop", "dev" or {"dockerfile": "PATH"}`

// checkImage says what is wrong with sandbox.image, or "".
func checkImage(raw json.RawMessage) string {
	var v string
	if json.Unmarshal(raw, &v) == nil {
		if v == ImageBrowser || v == ImageDesktop || v == ImageDev {
			return ""
		}
		return fmt.Sprintf("%s; it is %q", wantImage, v)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || len(obj) != 1 || obj["dockerfile"] == nil {
		return fmt.Sprintf("%s; it is %s", wantImage, raw)
	}
	var path string
	if json.Unmarshal(obj["dockerfile"], &path) != nil {
		return fmt.Sprintf("%s: PATH must be a string; it is %s", wantImage, obj["dockerfile"])
	}
	if reason := checkDockerfilePath(path); reason != "" {
		return fmt.Sprintf("names the Dockerfile %q, which %s", path, reason)
	}
	return ""
}

// checkDockerfilePath says what is wrong with a project Dockerfile's path,
// or "": it must name a file inside the project, relative to it, with /
// between its parts.
func checkDockerfilePath(path string) string {
	switch {
	case path == "":
		return "is empty"
	case len(path) > 1024:
		return "is longer than 1024 bytes"
	case strings.ContainsAny(path, "\\\x00"):
		return "has a backslash or NUL: write it relative to the project with /"
	case !filepath.IsLocal(filepath.FromSlash(path)) || filepath.ToSlash(filepath.Clean(path)) != path:
		return "must be a clean path relative to the project, inside it (such as .pilot/Dockerfile)"
	}
	return ""
}

// Display is a display size in pixels, as the files write it.
type Display struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Bounds of the project settings. Below them the desktop itself does not
// run well (it has about ten processes, and idles at 60 MiB); above them a
// setting is more likely a slip than a wish.
const (
	minDisplayWidth, maxDisplayWidth   = 320, 7680
	minDisplayHeight, maxDisplayHeight = 240, 4320
	minMemory                          = 512 << 20
	minCPUs                            = 0.5
	minProcesses, maxProcesses         = 64, 65536
	minShm                             = 64 << 20
)

// ConfigError is a project setting that cannot be used: Field names it the
// way it is written in the file ("sandbox.memory").
type ConfigError struct {
	File   string
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%s: %s %s", e.File, e.Field, e.Reason)
}

// ReadConfig reads and checks the project's sandbox settings. A
// settings file that is not a JSON object is a FileError (errCorrupt), a
// "sandbox" object with a wrong field a ConfigError.
func ReadConfig(project string) (Config, error) {
	var cfg Config
	doc, err := ReadSettings(project)
	if err != nil {
		return cfg, err
	}
	raw := doc.Raw("sandbox")
	if raw == nil {
		return cfg, nil
	}
	fail := func(field, reason string) (Config, error) {
		return cfg, &ConfigError{File: SettingsFile(project), Field: field, Reason: reason}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return fail("sandbox."+typeErr.Field, "must be a JSON "+jsonKind(typeErr.Type.Kind().String())+", not "+typeErr.Value)
		}
		return fail("sandbox", "is not valid: "+err.Error()+
			" (known fields: memory, cpus, processes, shmSize, display, image, network, agents)")
	}
	if field, reason := cfg.check(); field != "" {
		return fail(field, reason)
	}
	return cfg, nil
}

// jsonKind names a Go kind the way the settings file's author sees it.
func jsonKind(kind string) string {
	switch {
	case kind == "string":
		return "string"
	case kind == "struct":
		return "object"
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "float"):
		return "number"
	}
	return kind
}

// check returns the field that is out of bounds and why, or "".
func (c Config) check() (field, reason string) {
	if c.Memory != nil {
		if n, err := ParseSize(*c.Memory); err != nil {
			return "sandbox.memory", err.Error()
		} else if n < minMemory {
			return "sandbox.memory", fmt.Sprintf("must be at least %s; it is %q", units.BytesSize(minMemory), *c.Memory)
		}
	}
	if c.CPUs != nil && *c.CPUs < minCPUs {
		return "sandbox.cpus", fmt.Sprintf("must be at least %g; it is %g", minCPUs, *c.CPUs)
	}
	if p := c.Processes; p != nil && (*p < minProcesses || *p > maxProcesses) {
		return "sandbox.processes", fmt.Sprintf("must be from %d to %d; it is %d", minProcesses, maxProcesses, *p)
	}
	if c.ShmSize != nil {
		if n, err := ParseSize(*c.ShmSize); err != nil {
			return "sandbox.shmSize", err.Error()
		} else if n < minShm {
			return "sandbox.shmSize", fmt.Sprintf("must be at least %s; it is %q", units.BytesSize(minShm), *c.ShmSize)
		}
	}
	if c.Image != "" {
		if reason := checkImage(json.RawMessage(c.Image)); reason != "" {
			return "sandbox.image", reason
		}
	}
	if c.Network != "" {
		if _, problems := netpolicy.ParseRepository(json.RawMessage(c.Network)); problems != nil {
			return problems[0].Key, problems[0].Reason
		}
	}
	if c.Agents != "" {
		if _, reason := parseAgents(json.RawMessage(c.Agents)); reason != "" {
			return "sandbox.agents", reason
		}
	}
	if d := c.Display; d != nil {
		if d.Width < minDisplayWidth || d.Width > maxDisplayWidth {
			return "sandbox.display.width", fmt.Sprintf("must be from %d to %d; it is %d", minDisplayWidth, maxDisplayWidth, d.Width)
		}
		if d.Height < minDisplayHeight || d.Height > maxDisplayHeight {
			return "sandbox.display.height", fmt.Sprintf("must be from %d to %d; it is %d", minDisplayHeight, maxDisplayHeight, d.Height)
		}
	}
	return "", ""
}

// ParseSize reads a size the way `docker run --memory` does: a number with
// an optional unit b, k, m, g or t (powers of 1024; "GiB" and "gb" mean
// the same as "g").
func ParseSize(s string) (int64, error) {
	n, err := units.RAMInBytes(strings.TrimSpace(s))
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("must be a size such as \"512m\" or \"4g\"; it is %q", s)
	}
	return n, nil
}
