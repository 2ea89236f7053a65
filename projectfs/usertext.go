package projectfs

import (
	"bytes"
	"cmp"
	"fmt"
	"strings"
	"time"

	units "github.com/docker/go-units"

	"github.com/pilot-sandbox/pilot-sandbox/netpolicy"
)

// The user's config.json as text: the way doctor and the logs put it, and
// its durations the way the file writes them.

// String is the policy the way doctor and the logs put it.
func (c UserConfig) String() string {
	var b bytes.Buffer
	if c.IdleStop == 0 {
		b.WriteString("idleStop 0 (never)")
	} else {
		b.WriteString("idleStop " + FormatDuration(c.IdleStop))
	}
	if c.MaxRunning == 0 {
		b.WriteString(", maxRunning 0 (no cap)")
	} else {
		fmt.Fprintf(&b, ", maxRunning %d", c.MaxRunning)
	}
	fmt.Fprintf(&b, ", maxTasks %d", c.MaxTasks)
	if c.DiskBytes == 0 {
		b.WriteString(", disk 0 (no limit)")
	} else {
		b.WriteString(", disk " + units.BytesSize(float64(c.DiskBytes)))
	}
	fmt.Fprintf(&b, ", caps: memory %s, cpus %g, processes %d, shmSize %s",
		units.BytesSize(float64(c.Caps.MemoryBytes)), c.Caps.CPUs, c.Caps.Processes, units.BytesSize(float64(c.Caps.ShmBytes)))
	b.WriteString(", network " + networkText(c.Network))
	if c.RebuildAfter == 0 {
		b.WriteString(", rebuildAfter 0 (never)")
	} else {
		b.WriteString(", rebuildAfter " + FormatDuration(c.RebuildAfter))
	}
	for _, name := range sortedNames(c.Models) {
		fmt.Fprintf(&b, ", models.%s (key from $%s)", name, c.Models[name].APIKeyEnv)
	}
	if len(c.Agents) > 0 {
		b.WriteString(", agents " + strings.Join(c.Agents, " "))
	}
	if c.CloseAction != "" {
		b.WriteString(", closeAction " + c.CloseAction)
	}
	return b.String()
}

// networkText is the network policy in short: "none", or its preset and
// how many rules it has.
func networkText(n netpolicy.Config) string {
	if n.None {
		return "none"
	}
	s := "preset " + cmp.Or(n.Preset, netpolicy.DefaultPreset)
	if k := len(n.Allow) + len(n.Deny) + len(n.Ask); k > 0 {
		s += fmt.Sprintf(" (%d allow, %d deny, %d ask)", len(n.Allow), len(n.Deny), len(n.Ask))
	}
	return s
}

// NetworkKey says whether a config.json key is the network policy's:
// while one is wrong, no sandbox with a network starts.
func NetworkKey(key string) bool { return key == "network" || strings.HasPrefix(key, "network.") }

// FormatDuration writes a duration the way config.json does: "30m",
// "1h30m", "45s".
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
