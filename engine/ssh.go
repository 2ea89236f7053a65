package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// An engine on another machine is reached as the docker CLI reaches one
// (DOCKER_HOST=ssh://[user@]host[:port], or a context whose endpoint is
// one): through the user's own ssh, with its config, agent and known
// hosts, and `docker system dial-stdio` or the engine's socket on the
// other side (sshdial.go). go-dockerclient has no ssh support; it is
// given the dialer instead (client.go).

// sshTarget is the machine of an ssh:// endpoint.
type sshTarget struct {
	user, host, port string
}

// parseSSH reads ssh://[user@]host[:port], refusing what ssh would read
// as something else: a password (ssh takes none on its command line), a
// path or query (the docker CLI refuses them too), and a host or user
// that starts with "-", which ssh would take for an option.
func parseSSH(endpoint string) (sshTarget, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "ssh" {
		return sshTarget{}, fmt.Errorf("%q is not an ssh://[user@]host[:port] address", endpoint)
	}
	t := sshTarget{host: u.Hostname(), port: u.Port()}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			return sshTarget{}, fmt.Errorf("%s has a password: ssh takes none from the address; use a key (ssh-add)", redacted(u))
		}
		t.user = u.User.Username()
	}
	switch {
	case t.host == "":
		return sshTarget{}, fmt.Errorf("%q names no host", endpoint)
	case strings.HasPrefix(t.host, "-") || strings.HasPrefix(t.user, "-"):
		return sshTarget{}, fmt.Errorf("%q: a host or user may not start with '-'", endpoint)
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return sshTarget{}, fmt.Errorf("%q: an ssh:// address takes no path or query", endpoint)
	}
	if t.port != "" {
		if n, err := strconv.Atoi(t.port); err != nil || n < 1 || n > 65535 {
			return sshTarget{}, fmt.Errorf("%q: the port must be a number from 1 to 65535", endpoint)
		}
	}
	return t, nil
}

// redacted is u without its password, for messages.
func redacted(u *url.URL) string {
	v := *u
	v.User = url.User(u.User.Username())
	return v.String()
}

// String is how messages name the target: [user@]host[:port].
func (t sshTarget) String() string {
	s := t.host
	if t.user != "" {
		s = t.user + "@" + s
	}
	if t.port != "" {
		s += ":" + t.port
	}
	return s
}

// command is how a person would ssh to the target: ssh [-p PORT] [user@]host.
func (t sshTarget) command() string {
	s := "ssh "
	if t.port != "" {
		s += "-p " + t.port + " "
	}
	if t.user != "" {
		s += t.user + "@"
	}
	return s + t.host
}

// key names the target's sockets: a hash, so that the paths stay short
// (a Unix socket's path has at most 104 bytes on macOS) and one target
// shares one master between all the user's processes.
func (t sshTarget) key() string {
	sum := sha256.Sum256([]byte(t.user + "\x00" + t.host + "\x00" + t.port))
	return hex.EncodeToString(sum[:])[:16]
}

// persist is how long a master connection outlives its last use
// (ControlPersist): a command run a minute later finds it and pays no
// new login, and one left idle ends by itself.
const persist = 10 * time.Minute

// args are an ssh command line for the target: the options every ssh of
// the dialer runs with, then extra, the destination, and the remote
// command. BatchMode: nothing ever prompts (serve has no terminal; a
// prompt would hang it), so a missing key or an unknown host key is an
// error saying what to do. ControlMaster auto with ControlPersist: the
// first ssh logs in and stays in the background as the master, and every
// later one (of any of the user's processes) opens a channel on it
// instead of logging in. ServerAlive: a dead link ends the master within
// 45 s, so the next call connects again. StreamLocalBindUnlink: a
// forwarded socket left by an ended master is replaced, not refused.
func (d *sshDialer) args(extra []string, remote ...string) []string {
	a := []string{
		"-o", "BatchMode=yes",
		"-o", "ConnectTimeout=15",
		"-o", "ControlMaster=auto",
		"-o", "ControlPath=" + strings.ReplaceAll(d.control, "%", "%%"),
		"-o", fmt.Sprintf("ControlPersist=%d", int(persist.Seconds())),
		"-o", "ServerAliveInterval=15",
		"-o", "ServerAliveCountMax=3",
		"-o", "StreamLocalBindUnlink=yes",
		"-T",
	}
	if d.target.port != "" {
		a = append(a, "-p", d.target.port)
	}
	if d.target.user != "" {
		a = append(a, "-l", d.target.user)
	}
	a = append(a, extra...)
	a = append(a, "--", d.target.host)
	return append(a, remote...)
}

// maxSSHOutput bounds what is kept of an ssh command's output and errors.
const maxSSHOutput = 16 << 10

// run runs ssh to completion and returns its output, or an *sshError.
func (d *sshDialer) run(ctx context.Context, extra []string, remote ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out, stderr cappedBuffer
	out.max, stderr.max = maxSSHOutput, maxSSHOutput
	cmd := exec.CommandContext(ctx, d.ssh, d.args(extra, remote...)...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	// The master ssh starts stays in the background; it gives up its
	// standard streams, but should it not, Wait must not wait for it.
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	if err != nil {
		return "", d.failure(ctx, err, stderr.String())
	}
	return out.String(), nil
}

// sshError is an ssh that failed: what ssh said, and what to do (which
// the client gives as the UnavailableError's advice).
type sshError struct {
	target sshTarget
	said   string // ssh's or the remote command's last line of errors
	advice string
	// status is ssh's exit status: 255 for ssh's own failures, the
	// remote command's otherwise; -1 when ssh did not end by itself.
	status int
}

func (e *sshError) Error() string {
	msg := "ssh to " + e.target.String()
	if e.said != "" {
		msg += ": " + e.said
	}
	return msg
}

// failure explains a failed ssh. ssh reports its own failures with exit
// status 255 and a line on stderr, which is all there is to go by: the
// advice is chosen from OpenSSH's words for the failures a user can fix.
func (d *sshDialer) failure(ctx context.Context, err error, stderr string) error {
	e := &sshError{target: d.target, said: lastLine(strings.Split(stderr, "\n")), status: -1}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		e.status = exit.ExitCode()
	}
	switch {
	case errors.Is(err, exec.ErrNotFound):
		e.said, e.advice = "no ssh command on PATH", "install OpenSSH's client"
	case ctx.Err() != nil:
		e.said, e.advice = "no answer within 30s", "check that "+d.target.host+" is reachable ("+d.target.command()+" true)"
	case !errors.As(err, &exit):
		e.said = err.Error()
	case strings.Contains(stderr, "Permission denied"):
		e.advice = "pilot-sandbox logs in without asking anything: add your key to the ssh agent (ssh-add), " +
			"or name a key without a passphrase as IdentityFile in ~/.ssh/config"
	case strings.Contains(stderr, "Host key verification failed"), strings.Contains(stderr, "REMOTE HOST IDENTIFICATION HAS CHANGED"):
		e.advice = "its host key is not known here, or changed: connect once with plain " + d.target.command() +
			" and check the key it shows, so that ssh records it"
	case exit.ExitCode() == 127:
		e.advice = "it has no docker command on the PATH of a non-interactive shell: install the docker CLI there"
	}
	return e
}

// lastLine is the last line of lines that is not blank.
func lastLine(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(lines[i]); s != "" {
			return s
		}
	}
	return ""
}
