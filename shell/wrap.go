// Package shell builds the commands the sidecar runs under bash in a
// sandbox, and reads what they write back: foreground commands that end
// when they end (not when the last holder of their output lets go), and
// background processes started, listed and killed through the sidecar.
// It knows nothing of Docker; the service runs what it builds.
package shell

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
)

// OOMScore is the oom_score_adj of every command run for a client: if the
// sandbox runs out of memory, the kernel kills them before the desktop
// (and its agent), whose score stays 0; raising one's own score takes no
// privilege.
const OOMScore = 500

// killAfter is how long timeout(1) waits after SIGTERM before SIGKILL.
const killAfter = "2"

// NewMarker returns a marker no command's output will hold by chance.
func NewMarker() string {
	b := make([]byte, 16)
	rand.Read(b)
	// Not NUL, which an argument cannot hold.
	return "\x1epilot-exit-" + hex.EncodeToString(b) + "\x1e"
}

// markedScript runs its arguments after the marker as a command, then
// writes the marker on stdout, the marker and the command's status on
// stderr ("MARKER124;"), and exits with that status. A background child
// the command left behind may hold both streams open for as long as it
// runs: the markers say the command itself is over, and carry its status,
// which the engine may not report until the streams close (see Finish).
const markedScript = `"${@:2}"
s=$?
printf '%s' "$1"
printf '%s%d;' "$1" "$s" >&2
exit $s`

// Marked is argv run so that Finish sees its end by marker.
func Marked(marker string, argv ...string) []string {
	return append([]string{"bash", "-c", markedScript, "pilot-run", marker}, argv...)
}

// ForegroundArgv is Foreground for a program and its arguments as they
// are given, as docker exec runs them: the login shell sets up the
// environment (PATH, the profile), then execs argv with no word split,
// no glob and no expansion ("$@" is the arguments after bash's $0).
func ForegroundArgv(argv []string, seconds int) []string {
	return append(Foreground(`exec "$@"`, seconds), append([]string{"pilot-exec"}, argv...)...)
}

// ForegroundTerminal is ForegroundArgv on a terminal (docker exec -t).
// timeout(1) stays in the terminal's foreground process group
// (--foreground): in a group of its own, which it makes unless it leads
// the session, the command is stopped (SIGTTIN) at its first read of the
// terminal until the timeout ends it (measured: under Marked's bash, a
// `read` of the terminal ended in 124).
// On expiry it ends the command alone; what the command started gets
// SIGHUP as the terminal closes. No marker (Marked): a terminal is one
// stream, and the engine says the exit code.
func ForegroundTerminal(argv []string, seconds int) []string {
	return append([]string{
		"choom", "-n", strconv.Itoa(OOMScore), "--",
		"timeout", "--foreground", "--kill-after=" + killAfter, strconv.Itoa(seconds),
		"bash", "-lc", `exec "$@"`, "pilot-exec",
	}, argv...)
}

// Foreground is the argv of a command run under bash -lc for at most
// seconds: timeout(1), on expiry, ends its process group (SIGTERM, SIGKILL
// 2 s later).
func Foreground(command string, seconds int) []string {
	return []string{
		"choom", "-n", strconv.Itoa(OOMScore), "--",
		"timeout", "--kill-after=" + killAfter, strconv.Itoa(seconds), "bash", "-lc", command,
	}
}
