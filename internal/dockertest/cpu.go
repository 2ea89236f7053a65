package dockertest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// EngineCPU is the CPU time the local engine's processes (dockerd,
// containerd and the containers' shims, with their reaped children such as
// runc) have used, read from /proc: the difference over a benchmark is
// what it cost the engine, plus whatever else used the engine meanwhile.
// It is zero where /proc does not show the engine (Docker Desktop).
func EngineCPU() time.Duration {
	entries, _ := os.ReadDir("/proc")
	var ticks int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		stat := string(data)
		open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
		if open < 0 || end < 0 || end+2 > len(stat) {
			continue
		}
		name := stat[open+1 : end]
		if name != "dockerd" && name != "containerd" && !strings.HasPrefix(name, "containerd-shim") {
			continue
		}
		fields := strings.Fields(stat[end+2:])
		if len(fields) < 15 {
			continue
		}
		for _, i := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime
			v, _ := strconv.ParseInt(fields[i], 10, 64)
			ticks += v
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}
