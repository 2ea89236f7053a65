package shell

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// procStat is what a process's line in /proc/PID/stat says that matters
// here.
type procStat struct {
	session   int
	startTime string // clock ticks after boot: with the pid, names one process
	zombie    bool
}

// ParseList reads List's output: the background processes that still run
// (in the order of their records), and the pids whose records are stale.
// A process runs while its session (the one setsid gave it, whose id is
// its pid) has a live member; the record's start time must match the
// process with its pid, if there is one, so a recycled pid is not taken
// for it.
func ParseList(out []byte) (running []Process, stale []int) {
	records, stats := splitList(out)
	for _, r := range records {
		if alive(r, stats) {
			running = append(running, Process{PID: r.pid, Command: r.Command, StartedAt: r.StartedAt, LogPath: r.LogPath})
		} else {
			stale = append(stale, r.pid)
		}
	}
	return running, stale
}

// listed is a record as List prints it.
type listed struct {
	Record
	pid       int
	startTime string
}

func alive(r listed, stats map[int]procStat) bool {
	if leader, ok := stats[r.pid]; ok && !leader.zombie && leader.session == r.pid {
		return leader.startTime == r.startTime
	}
	for _, st := range stats {
		if st.session == r.pid && !st.zombie {
			return true
		}
	}
	return false
}

// splitList reads the records, then the kernel's process lines. A record
// or line that does not parse is left out.
func splitList(out []byte) ([]listed, map[int]procStat) {
	var records []listed
	stats := map[int]procStat{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	inRecords := true
	for sc.Scan() {
		line := sc.Text()
		if inRecords {
			if line == "--" {
				inRecords = false
			} else if r, ok := parseRecord(line); ok {
				records = append(records, r)
			}
			continue
		}
		if pid, st, ok := parseStat(line); ok {
			stats[pid] = st
		}
	}
	return records, stats
}

// parseRecord reads a record's line: "PID START JSON".
func parseRecord(line string) (listed, bool) {
	f := strings.SplitN(line, " ", 3)
	if len(f) != 3 {
		return listed{}, false
	}
	r := listed{startTime: f[1]}
	pid, err := strconv.Atoi(f[0])
	if err != nil || json.Unmarshal([]byte(f[2]), &r.Record) != nil {
		return listed{}, false
	}
	r.pid = pid
	return r, true
}

// parseStat reads a /proc/PID/stat line: "PID (COMM) STATE PPID PGRP
// SESSION ...", where COMM may hold spaces and parentheses, so the fields
// are counted from its last ")".
func parseStat(line string) (int, procStat, bool) {
	head, _, _ := strings.Cut(line, " ")
	pid, err := strconv.Atoi(head)
	i := strings.LastIndex(line, ") ")
	if err != nil || i < 0 {
		return 0, procStat{}, false
	}
	f := strings.Fields(line[i+2:])
	// Fields after COMM: state is field 3 of the line, session 6,
	// starttime 22.
	if len(f) < 20 {
		return 0, procStat{}, false
	}
	session, err := strconv.Atoi(f[3])
	if err != nil {
		return 0, procStat{}, false
	}
	return pid, procStat{session: session, startTime: f[19], zombie: f[0] == "Z" || f[0] == "X"}, true
}
