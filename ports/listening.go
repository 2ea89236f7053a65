package ports

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Listening is a TCP port something listens on in the sandbox.
type Listening struct {
	Port    int    `json:"port"`
	Process string `json:"process,omitempty"` // the listener's command name, when the sandbox user may see it
	// usersOwn: a listener on the port is the sandbox user's (desktop.UID),
	// not the desktop's, the relays' (the desktop user's), the egress
	// proxy's (pilot-net) or Docker's DNS (root).
	usersOwn bool
}

// listeningScript prints the kernel's TCP tables, a line "--", the
// sockets each process holds ("/proc/PID/fd socket:[INODE]"), a line
// "--", then each of those processes' pid and command name.
const listeningScript = `cat /proc/net/tcp /proc/net/tcp6 2>/dev/null
echo --
find /proc/[0-9]*/fd -lname 'socket:*' -printf '%h %l\n' 2>/dev/null
echo --
for c in /proc/[0-9]*/comm; do
  read -r name 2>/dev/null <"$c" || continue
  p=${c#/proc/}
  printf '%s %s\n' "${p%/comm}" "$name"
done
exit 0`

// maxListingOutput bounds what the listing reads.
const maxListingOutput = 4 << 20

// listen lists what listens on TCP in the project's sandbox, by port.
func listen(ctx context.Context, sb Sandboxes, project string) ([]Listening, error) {
	res, err := sb.ExecArgv(ctx, project, service.ExecSpec{Cmd: []string{"bash", "-c", listeningScript}, Timeout: checkTimeout, MaxOutput: maxListingOutput})
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("list listening ports: exit %d: %s", res.ExitCode, res.Stderr)
	}
	return parseListening(res.Stdout), nil
}

// parseListening reads listeningScript's output.
func parseListening(out []byte) []Listening {
	var sections [3][]string
	part := 0
	for line := range strings.Lines(string(out)) {
		line = strings.TrimRight(line, "\n")
		if line == "--" && part < 2 {
			part++
			continue
		}
		sections[part] = append(sections[part], line)
	}
	inodes := listeningInodes(sections[0])
	names := commNames(sections[2])
	byPort := map[int]*Listening{}
	for _, s := range inodes {
		l := byPort[s.port]
		if l == nil {
			l = &Listening{Port: s.port}
			byPort[s.port] = l
		}
		l.usersOwn = l.usersOwn || s.uid == strconv.Itoa(desktop.UID)
	}
	for _, line := range sections[1] {
		dir, link, ok := strings.Cut(line, " ")
		inode := strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")
		s, listening := inodes[inode]
		if !ok || !listening || byPort[s.port].Process != "" {
			continue
		}
		pid := strings.TrimSuffix(strings.TrimPrefix(dir, "/proc/"), "/fd")
		byPort[s.port].Process = names[pid]
	}
	out2 := make([]Listening, 0, len(byPort))
	for _, l := range byPort {
		out2 = append(out2, *l)
	}
	slices.SortFunc(out2, func(a, b Listening) int { return a.Port - b.Port })
	return out2
}

// socket is a listening socket of the kernel's table.
type socket struct {
	port int
	uid  string
}

// listeningInodes reads /proc/net/tcp and tcp6 lines: "sl local rem st
// tx:rx tr:when retrnsmt uid timeout inode"; st 0A is LISTEN, local is
// HEXADDR:HEXPORT. By inode.
func listeningInodes(table []string) map[string]socket {
	out := map[string]socket{}
	for _, line := range table {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" {
			continue
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		port, err := strconv.ParseUint(hexPort, 16, 16)
		if ok && err == nil {
			out[f[9]] = socket{port: int(port), uid: f[7]}
		}
	}
	return out
}

// commNames reads "PID NAME" lines.
func commNames(lines []string) map[string]string {
	out := map[string]string{}
	for _, line := range lines {
		if pid, name, ok := strings.Cut(line, " "); ok {
			out[pid] = name
		}
	}
	return out
}
