package shell

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"
)

// Dir is where, in the sandbox, the background processes started through
// the sidecar leave their records (PID.proc) and logs: in the sandbox, so
// that any sidecar serving it, and one started later, sees them too.
const Dir = "/tmp/pilot-bg"

// Record is what the sidecar knows of a background process.
type Record struct {
	Command   string `json:"command"`
	StartedAt int64  `json:"startedAt"` // milliseconds since the Unix epoch
	LogPath   string `json:"logPath"`
}

// Process is a background process that runs.
type Process struct {
	PID       int    `json:"pid"`
	Command   string `json:"command"`
	StartedAt int64  `json:"startedAt"`
	LogPath   string `json:"logPath"`
}

// LogPath is where the output of the background process named id goes.
func LogPath(id string) string { return path.Join(Dir, id+".log") }

// recordPath is the record of the process whose pid is pid.
func recordPath(pid int) string { return path.Join(Dir, strconv.Itoa(pid)+".proc") }

// backgroundScript starts the command in a session of its own (setsid, so
// sandbox/kill can end it and everything it started, and no signal to the
// exec's own group reaches it), with its output in the log and its stdin
// from a file (which it removes once open) or /dev/null. It writes the
// process's record, the start time the kernel gives it (to tell it from a
// later process with the same pid) then the record's JSON, and prints its
// pid. The record is written whole or not at all (rename).
const backgroundScript = `set -e
dir=$1 log=$2 cmd=$3 rec=$4 in=/dev/null
mkdir -p -m 700 "$dir"
: >"$log"
if [ "$5" = 1 ]; then in=$dir/$$.stdin; cat >"$in"; fi
choom -n "$6" -- setsid bash -c 'exec <"$1" >>"$2" 2>&1; [ "$1" = /dev/null ] || rm -f "$1"; exec bash -lc "$3"' pilot-bg "$in" "$log" "$cmd" &
pid=$!
stat=$(cat /proc/$pid/stat 2>/dev/null) || stat=
set -f
set -- ${stat##*) }
printf '%s\n%s\n' "${20:-0}" "$rec" >"$dir/$pid.proc.tmp"
mv "$dir/$pid.proc.tmp" "$dir/$pid.proc"
echo "$pid"`

// Background is the argv that starts command in the background as the
// record says, reading the exec's stdin first when stdin is set. It prints
// the process's pid.
func Background(command string, rec Record, stdin bool) ([]string, error) {
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	flag := "0"
	if stdin {
		flag = "1"
	}
	return []string{"bash", "-c", backgroundScript, "pilot-bg", Dir, rec.LogPath, command, string(data), flag, strconv.Itoa(OOMScore)}, nil
}

// ParsePID reads the pid Background's command printed.
func ParsePID(out []byte) (int, error) {
	text := string(out)
	for len(text) > 0 && (text[len(text)-1] == '\n') {
		text = text[:len(text)-1]
	}
	pid, err := strconv.Atoi(text)
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("the background start printed %q, not a pid", out)
	}
	return pid, nil
}

// listScript prints every record on a line (its pid, start time and
// JSON), a line "--", then the kernel's line for every process in the
// sandbox.
const listScript = `cd "$1" 2>/dev/null || exit 0
for f in *.proc; do
  [ -f "$f" ] || continue
  start= meta=
  { read -r start; read -r meta; } <"$f" || true
  printf '%s %s %s\n' "${f%.proc}" "$start" "$meta"
done
echo --
cat /proc/[0-9]*/stat 2>/dev/null
exit 0`

// List is the argv that prints what ParseList reads.
func List() []string { return []string{"bash", "-c", listScript, "pilot-bg-list", Dir} }

// killScript ends every process of the session $1 (the background
// process and all it started, whatever process group they moved to):
// SIGTERM, up to 2 s for them to go, then SIGKILL. Zombies are gone
// already. It exits 3 if none ran, 4 if some outlived SIGKILL.
const killScript = `sid=$1
members() {
  local f l
  for f in /proc/[0-9]*/stat; do
    read -r l 2>/dev/null <"$f" || continue
    set -- ${l##*) }
    [ "$4" = "$sid" ] && [ "$1" != Z ] && printf '%s ' "${l%% *}"
  done
}
p=$(members)
[ -n "$p" ] || exit 3
kill -TERM $p 2>/dev/null
for sig in TERM KILL; do
  i=0
  while [ $i -lt 40 ]; do
    [ $sig = KILL ] && kill -KILL $p 2>/dev/null
    sleep 0.05
    p=$(members)
    if [ -z "$p" ]; then rm -f "$2"; exit 0; fi
    i=$((i+1))
  done
done
exit 4`

// Exit statuses of Kill's command.
const (
	KillNoneRan  = 3
	KillOutlived = 4
)

// Kill is the argv that ends the background process pid with everything
// it started, and removes its record.
func Kill(pid int) []string {
	return []string{"bash", "-c", killScript, "pilot-bg-kill", strconv.Itoa(pid), recordPath(pid)}
}

// Forget is the argv that removes the records of processes that ended.
func Forget(pids []int) []string {
	argv := []string{"rm", "-f", "--"}
	for _, pid := range pids {
		argv = append(argv, recordPath(pid))
	}
	return argv
}
