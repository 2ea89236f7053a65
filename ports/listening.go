package ports

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// Listening is a TCP port something listens on in the sandbox.
type Listening struct {
	Port    int    `json:"port"`
	Process string `json:"process,omitempty"` // the listener's command name, when the sandbox user may see it
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
	inodes := listeningInodes(sections[0]) // inode -> port
	names := commNames(sections[2])
	byPort := map[int]string{}
	for _, port := range inodes {
		byPort[port] = ""
	}
	for _, line := range sections[1] {
		dir, link, ok := strings.Cut(line, " ")
		inode := strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")
		port, listening := inodes[inode]
		if !ok || !listening || byPort[port] != "" {
			continue
		}
		pid := strings.TrimSuffix(strings.TrimPrefix(dir, "/proc/"), "/fd")
		byPort[port] = names[pid]
	}
	out2 := make([]Listening, 0, len(byPort))
	for port, name := range byPort {
		out2 = append(out2, Listening{Port: port, Process: name})
	}
	slices.SortFunc(out2, func(a, b Listening) int { return a.Port - b.Port })
	return out2
}

// listeningInodes reads /proc/net/tcp and tcp6 lines: "sl local rem st
// ... uid timeout inode"; st 0A is LISTEN, local is HEXADDR:HEXPORT.
// Docker's DNS (dockerDNS) is the engine's, not the sandbox's: left out.
func listeningInodes(table []string) map[string]int {
	out := map[string]int{}
	for _, line := range table {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" {
			continue
		}
		addr, hexPort, ok := strings.Cut(f[1], ":")
		if addr == dockerDNS {
			continue
		}
		port, err := strconv.ParseUint(hexPort, 16, 16)
		if ok && err == nil {
			out[f[9]] = int(port)
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
