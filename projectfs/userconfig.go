package projectfs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	units "github.com/docker/go-units"

	"github.com/pilot-sandbox/pilot-sandbox/netpolicy"
)

// UserConfig is the user's own lifecycle policy: pilot-sandbox/config.json
// under the XDG config directory. Every key is optional.
//
//	{"idleStop": "30m", "maxRunning": 4, "maxTasks": 1, "disk": "10g", "rebuildAfter": "168h",
//	 "caps": {"memory": "4g", "cpus": 2, "processes": 4096, "shmSize": "2g"},
//	 "network": {"preset": "dev", "allow": ["example.org"]}}
//
// It belongs to the user, not to a project: a repository cannot raise it.
type UserConfig struct {
	// IdleStop is how long a running sandbox may go without activity
	// before it is stopped; 0 never stops one.
	IdleStop time.Duration
	// MaxRunning is how many sandboxes may run at once; 0 is no cap.
	MaxRunning int
	// MaxTasks is how many tasks may run at once in one sandbox
	// (docs/tasks.md): they share its /workspace.
	MaxTasks int
	// DiskBytes bounds a sandbox's own files (its container's writable
	// layer); 0 is no limit.
	DiskBytes int64
	// Caps are the most a project's .pilot/settings.json may ask without
	// the user's approval.
	Caps Caps
	// Network is the network policy (netpolicy.ParseConfig); "network":
	// "none" gives every sandbox no network at all (Network.None).
	Network netpolicy.Config
	// RebuildAfter is the age past which the sandbox image is built again,
	// without the build's cache, for the security updates of its packages
	// (at the next new sandbox); 0 never rebuilds it for its age.
	RebuildAfter time.Duration
	// Models are the model providers whose APIs tasks reach through the
	// sidecar's gateway, by name (models.go); none by default.
	Models map[string]ModelProvider
	// CloseAction is what the app's close of a project does to its
	// sandbox (sandbox/close): ClosePause freezes it with every window
	// kept, CloseStop stops it.
	CloseAction string
	// RecordingMaxBytes bounds one recording's file; RecordTasks records
	// every task from its start to its end (docs/recording.md).
	RecordingMaxBytes int64
	RecordTasks       bool
	// Agents are the agent CLIs every sandbox's image carries (agents.go);
	// CACertificates the extra CA files npm trusts while installing them.
	Agents         []string
	CACertificates []string
}

// What sandbox/close does (UserConfig.CloseAction).
const (
	ClosePause = "pause"
	CloseStop  = "stop"
)

// Caps are resource limits in the units the engine takes.
type Caps struct {
	MemoryBytes int64
	CPUs        float64
	Processes   int64
	ShmBytes    int64
}

// DefaultUserConfig is the policy of a user without a config.json, and
// of each key the file leaves out.
func DefaultUserConfig() UserConfig {
	return UserConfig{
		IdleStop:   30 * time.Minute,
		MaxRunning: 4,
		MaxTasks:   1,
		DiskBytes:  10 << 30,
		Caps:       Caps{MemoryBytes: 4 << 30, CPUs: 2, Processes: 4096, ShmBytes: 2 << 30},

		RebuildAfter: 7 * 24 * time.Hour,
		CloseAction:  ClosePause,

		RecordingMaxBytes: 500 << 20,
	}
}

// Bounds of the user's config. MinIdleStop keeps a slip ("30s" for
// "30m") from stopping sandboxes under the user's hands; tests lower it
// through ReadUserConfig's minIdle.
const (
	MinIdleStop = time.Minute
	// minRebuildAfter keeps a slip ("168s" for "168h") from rebuilding
	// the image at every new sandbox.
	minRebuildAfter = time.Hour
	maxMaxRunning   = 1000
	maxMaxTasks     = 16
	minDisk         = 64 << 20
	minRecording    = 1 << 20
)

// UserConfigFile is config.json under the XDG config directory.
func UserConfigFile(configHome string) string {
	return filepath.Join(configHome, "pilot-sandbox", "config.json")
}

// ConfigProblem is one key of config.json that cannot be used, named the
// way the file writes it ("caps.memory"); Key is "" for the file as a
// whole.
type ConfigProblem struct {
	Key    string
	Reason string
}

// UserConfigError lists what is wrong with the user's config.json.
type UserConfigError struct {
	File     string
	Problems []ConfigProblem
	// Unreadable says the file could not be read at all.
	Unreadable bool
}

func (e *UserConfigError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = strings.TrimSpace(p.Key + " " + p.Reason)
	}
	return e.File + ": " + strings.Join(parts, "; ")
}

// Keys are the keys at fault, "" standing for the whole file.
func (e *UserConfigError) Keys() []string {
	keys := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		keys[i] = p.Key
	}
	return keys
}

// ReadUserConfig reads the user's config.json at path. A missing file is
// the defaults. Each key that cannot be used keeps its default and is
// named in the returned *UserConfigError, next to the keys that could;
// a file that cannot be read or is not a JSON object is the defaults with
// such an error. idleStop below minIdle (MinIdleStop, unless a test
// lowers it) is refused.
func ReadUserConfig(path string, minIdle time.Duration) (UserConfig, error) {
	cfg := DefaultUserConfig()
	data, err := os.ReadFile(path)
	if missing(err) {
		return cfg, nil
	}
	if err != nil {
		return cfg, &UserConfigError{File: path, Unreadable: true, Problems: []ConfigProblem{{Reason: "cannot be read: " + bare(err).Error()}}}
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil || doc == nil {
		reason := "is not a JSON object"
		var typeErr *json.UnmarshalTypeError
		if err != nil && !errors.As(err, &typeErr) {
			reason = "is not valid JSON: " + err.Error()
		}
		return cfg, &UserConfigError{File: path, Problems: []ConfigProblem{{Reason: reason}}}
	}
	p := configParser{minIdle: minIdle}
	p.parse(doc, &cfg)
	if len(p.problems) > 0 {
		return cfg, &UserConfigError{File: path, Problems: p.problems}
	}
	return cfg, nil
}

// configParser collects the problems of one config.json.
type configParser struct {
	minIdle  time.Duration
	problems []ConfigProblem
}

func (p *configParser) fail(key, format string, args ...any) {
	p.problems = append(p.problems, ConfigProblem{Key: key, Reason: fmt.Sprintf(format, args...)})
}

var userConfigKeys = []string{"idleStop", "maxRunning", "maxTasks", "disk", "caps", "network", "rebuildAfter", "models", "closeAction", "recordingMaxBytes", "recordTasks", "agents", "caCertificates"}

func (p *configParser) parse(doc map[string]json.RawMessage, cfg *UserConfig) {
	for _, key := range sortedNames(doc) {
		raw := doc[key]
		switch key {
		case "idleStop":
			p.duration(key, raw, p.minIdle, `"30m" or "2h"`, &cfg.IdleStop)
		case "maxRunning":
			p.integer(key, raw, 0, maxMaxRunning, "0 for no cap", func(n int64) { cfg.MaxRunning = int(n) })
		case "maxTasks":
			p.integer(key, raw, 1, maxMaxTasks, "1, one task at a time", func(n int64) { cfg.MaxTasks = int(n) })
		case "disk":
			p.size(key, raw, minDisk, true, &cfg.DiskBytes)
		case "recordingMaxBytes":
			p.size(key, raw, minRecording, false, &cfg.RecordingMaxBytes)
		case "recordTasks":
			if json.Unmarshal(raw, &cfg.RecordTasks) != nil {
				p.fail(key, "must be true or false; it is %s", raw)
			}
		case "caps":
			p.caps(raw, &cfg.Caps)
		case "network":
			network, problems := netpolicy.ParseConfig(raw)
			for _, np := range problems {
				p.fail(np.Key, "%s", np.Reason)
			}
			cfg.Network = network
		case "rebuildAfter":
			p.duration(key, raw, minRebuildAfter, `"168h"`, &cfg.RebuildAfter)
		case "models":
			p.models(raw, &cfg.Models)
		case "agents":
			p.agents(raw, &cfg.Agents)
		case "caCertificates":
			p.caCertificates(raw, &cfg.CACertificates)
		case "closeAction":
			p.oneOf(key, raw, []string{ClosePause, CloseStop}, &cfg.CloseAction)
		default:
			p.fail(key, "is not a known key (known: %s)", strings.Join(userConfigKeys, ", "))
		}
	}
}

// duration reads a duration of at least least, or "0" for never; example
// is one the error message offers.
func (p *configParser) duration(key string, raw json.RawMessage, least time.Duration, example string, dst *time.Duration) {
	want := `must be a duration such as ` + example + `, or "0" for never`
	var s string
	if json.Unmarshal(raw, &s) != nil {
		p.fail(key, "%s; it is %s", want, raw)
		return
	}
	if strings.TrimSpace(s) == "0" {
		*dst = 0
		return
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	switch {
	case err != nil || d < 0:
		p.fail(key, "%s; it is %q", want, s)
	case d < least:
		p.fail(key, "must be at least %s, or \"0\" for never; it is %q", FormatDuration(least), s)
	default:
		*dst = d
	}
}

// oneOf reads a string that is one of values.
func (p *configParser) oneOf(key string, raw json.RawMessage, values []string, dst *string) {
	var s string
	if json.Unmarshal(raw, &s) != nil || !slices.Contains(values, s) {
		p.fail(key, "must be %s; it is %s", `"`+strings.Join(values, `" or "`)+`"`, raw)
		return
	}
	*dst = s
}

// integer reads a whole number from lo to hi.
func (p *configParser) integer(key string, raw json.RawMessage, lo, hi int64, note string, set func(int64)) {
	var f float64
	if json.Unmarshal(raw, &f) != nil || f != float64(int64(f)) || int64(f) < lo || int64(f) > hi {
		if note != "" {
			note = " (" + note + ")"
		}
		p.fail(key, "must be a whole number from %d to %d%s; it is %s", lo, hi, note, raw)
		return
	}
	set(int64(f))
}

// size reads a size such as "4g"; zero says "0" means no limit.
func (p *configParser) size(key string, raw json.RawMessage, least int64, zero bool, dst *int64) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		p.fail(key, `must be a size such as "512m" or "4g"; it is %s`, raw)
		return
	}
	if zero && strings.TrimSpace(s) == "0" {
		*dst = 0
		return
	}
	n, err := ParseSize(s)
	switch {
	case err != nil:
		p.fail(key, "%v", err)
	case n < least:
		p.fail(key, "must be at least %s; it is %q", units.BytesSize(float64(least)), s)
	default:
		*dst = n
	}
}

func (p *configParser) caps(raw json.RawMessage, caps *Caps) {
	var doc map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil || doc == nil {
		p.fail("caps", "must be an object such as {\"memory\": \"4g\", \"cpus\": 2}; it is %s", raw)
		return
	}
	for _, key := range sortedNames(doc) {
		v := doc[key]
		switch key {
		case "memory":
			p.size("caps.memory", v, minMemory, false, &caps.MemoryBytes)
		case "cpus":
			var f float64
			if json.Unmarshal(v, &f) != nil || f < minCPUs {
				p.fail("caps.cpus", "must be a number, at least %g; it is %s", minCPUs, v)
				continue
			}
			caps.CPUs = f
		case "processes":
			p.integer("caps.processes", v, minProcesses, maxProcesses, "", func(n int64) { caps.Processes = n })
		case "shmSize":
			p.size("caps.shmSize", v, minShm, false, &caps.ShmBytes)
		default:
			p.fail("caps."+key, "is not a known key (known: memory, cpus, processes, shmSize)")
		}
	}
}

func sortedNames[V any](doc map[string]V) []string {
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
