package shell

import (
	"fmt"
	"reflect"
	"testing"
)

// stat is a /proc/PID/stat line with the fields ParseList reads.
func stat(pid int, comm, state string, session int, start string) string {
	return fmt.Sprintf("%d (%s) %s 1 %d %d 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 %s 1000 100", pid, comm, state, session, session, start)
}

func TestParseListKeepsWhatRuns(t *testing.T) {
	rec := func(pid int, start, command string) string {
		return fmt.Sprintf("%d %s {\"command\":%q,\"startedAt\":1700000000000,\"logPath\":\"/tmp/pilot-bg/%d.log\"}\n", pid, start, command, pid)
	}
	out := rec(10, "500", "leader alive") +
		rec(20, "600", "leader gone, a child runs") +
		rec(30, "700", "pid recycled") +
		rec(40, "800", "only a zombie") +
		rec(50, "900", "gone") +
		"garbage\n" + "60 1\n" + "70 1 {not json\n" + "--\n" +
		stat(10, "python3", "S", 10, "500") +
		"\n" + stat(21, "a) b (c", "S", 20, "650") +
		"\n" + stat(30, "other", "S", 30, "999") +
		"\n" + stat(40, "sh", "Z", 40, "800") +
		"\n" + "not a stat line\n"
	running, stale := ParseList([]byte(out))
	var pids []int
	for _, p := range running {
		pids = append(pids, p.PID)
	}
	if !reflect.DeepEqual(pids, []int{10, 20}) || !reflect.DeepEqual(stale, []int{30, 40, 50}) {
		t.Errorf("running %v, stale %v", pids, stale)
	}
	want := Process{PID: 10, Command: "leader alive", StartedAt: 1700000000000, LogPath: "/tmp/pilot-bg/10.log"}
	if len(running) > 0 && running[0] != want {
		t.Errorf("process %+v, want %+v", running[0], want)
	}
}

func TestParseStatCountsFromTheLastParenthesis(t *testing.T) {
	pid, st, ok := parseStat(stat(7, "x) S 1 99 99 (y", "R", 7, "12345"))
	if !ok || pid != 7 || st.session != 7 || st.startTime != "12345" || st.zombie {
		t.Errorf("pid %d, %+v, %v", pid, st, ok)
	}
}
