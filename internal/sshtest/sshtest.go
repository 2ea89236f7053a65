// Package sshtest gives tests this machine's Docker engine as a remote
// one: an sshd of the test's own on 127.0.0.1 (key login only, its own
// host key, an authorized key it makes, all in a temporary directory) in
// front of the same engine, reached as DOCKER_HOST=ssh://USER@127.0.0.1:PORT
// through an ssh config the test writes, so that the user's own ~/.ssh
// (keys, known hosts, config, agent) is never read or touched. Between ssh
// and sshd runs a link of the test's (link.go) that can delay each
// direction and drop every connection at once.
//
// A test without sshd is skipped, or fails when PILOT_REQUIRE_DOCKER=1
// (scripts/dev-env.sh installs openssh-server).
package sshtest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
)

// Options change the server.
type Options struct {
	// Delay is added to each direction of the link (20 ms each way is a
	// link with a 40 ms round trip).
	Delay time.Duration
	// NoSocketForwarding sets sshd's AllowStreamLocalForwarding no, as
	// some servers do: the engine's socket cannot be forwarded, and each
	// connection runs docker system dial-stdio.
	NoSocketForwarding bool
}

// Server is a running sshd of the test's.
type Server struct {
	dir     string // keys, configs, the ssh wrapper
	runtime string // the XDG_RUNTIME_DIR the client's sockets go in
	user    string
	link    *Link
	sshd    *exec.Cmd
	log     *syncBuffer
}

// Start starts an sshd for the test, ended when the test ends. The
// engine must answer (dockertest.Engine decides the skip).
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	dockertest.Engine(t)
	sshd := findSSHD(t)
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{dir: t.TempDir(), user: u.Username, log: &syncBuffer{}}
	// Short: the client's control socket goes in it (at most 104 bytes).
	if s.runtime, err = os.MkdirTemp("", "pst-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(s.runtime) })
	s.keys(t)
	port := s.startSSHD(t, sshd, opts)
	s.link = NewLink(t, "127.0.0.1:"+strconv.Itoa(port), opts.Delay)
	s.clientFiles(t)
	// Ends the master the client started (it outlives its ssh by design,
	// ControlPersist), before sshd.
	t.Cleanup(s.endMasters)
	return s
}

// findSSHD is sshd's path; without one the test is skipped, or fails
// when PILOT_REQUIRE_DOCKER=1.
func findSSHD(t testing.TB) string {
	for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"} {
		if _, err := os.Stat(p); err == nil {
			if os.Getuid() == 0 {
				// Debian's sshd refuses to start without its privilege
				// separation directory, which a boot would make.
				os.MkdirAll("/run/sshd", 0o755)
			}
			return p
		}
	}
	if os.Getenv(dockertest.RequireEnv) == "1" {
		t.Fatalf("no sshd, and %s=1: install openssh-server (scripts/dev-env.sh does)", dockertest.RequireEnv)
	}
	t.Skipf("no sshd (install openssh-server, or set %s=1 to fail instead)", dockertest.RequireEnv)
	return ""
}

// keys makes the host key and the user's key.
func (s *Server) keys(t testing.TB) {
	for _, name := range []string{"host_key", "user_key"} {
		out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "pilot-sandbox-test",
			"-f", filepath.Join(s.dir, name)).CombinedOutput()
		if err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	pub := s.read(t, "user_key.pub")
	s.write(t, "authorized_keys", pub, 0o600)
}

// startSSHD runs sshd in the foreground (so that it is the test's child)
// on a free port of 127.0.0.1, and waits until it accepts connections.
func (s *Server) startSSHD(t testing.TB, sshd string, opts Options) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	forwarding := "yes"
	if opts.NoSocketForwarding {
		forwarding = "no"
	}
	s.write(t, "sshd_config", strings.Join([]string{
		"ListenAddress 127.0.0.1",
		"Port " + strconv.Itoa(port),
		"HostKey " + filepath.Join(s.dir, "host_key"),
		"AuthorizedKeysFile " + filepath.Join(s.dir, "authorized_keys"),
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PermitRootLogin prohibit-password",
		"StrictModes no", // the temporary directory's modes are the test's
		"UsePAM no",
		"PidFile none",
		"AllowStreamLocalForwarding " + forwarding,
		"LogLevel VERBOSE",
	}, "\n")+"\n", 0o600)
	s.sshd = exec.Command(sshd, "-D", "-e", "-f", filepath.Join(s.dir, "sshd_config"))
	s.sshd.Stdout, s.sshd.Stderr = s.log, s.log
	if err := s.sshd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.sshd.Process.Kill()
		s.sshd.Wait()
		if t.Failed() {
			t.Logf("sshd's log:\n%s", s.log.String())
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
			return port
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd does not listen: %v\n%s", err, s.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// clientFiles writes the ssh config the client uses (the test's key and
// known hosts only, no agent), the known host, and an ssh on PATH that
// reads that config.
func (s *Server) clientFiles(t testing.TB) {
	hostKey := strings.Fields(s.read(t, "host_key.pub"))
	s.write(t, "known_hosts", fmt.Sprintf("[127.0.0.1]:%d %s %s\n", s.link.Port(), hostKey[0], hostKey[1]), 0o600)
	s.write(t, "ssh_config", strings.Join([]string{
		"Host *",
		"  IdentityFile " + filepath.Join(s.dir, "user_key"),
		"  IdentitiesOnly yes",
		"  IdentityAgent none",
		"  UserKnownHostsFile " + filepath.Join(s.dir, "known_hosts"),
		"  GlobalKnownHostsFile /dev/null",
		"  StrictHostKeyChecking yes",
		"  LogLevel ERROR",
	}, "\n")+"\n", 0o600)
	real, err := exec.LookPath("ssh")
	if err != nil {
		t.Fatalf("no ssh client: %v", err)
	}
	os.MkdirAll(filepath.Join(s.dir, "bin"), 0o700)
	s.write(t, "bin/ssh", fmt.Sprintf("#!/bin/sh\nexec %s -F %s \"$@\"\n", real, filepath.Join(s.dir, "ssh_config")), 0o700)
}

// Endpoint is the engine's address through the server.
func (s *Server) Endpoint() string {
	return fmt.Sprintf("ssh://%s@127.0.0.1:%d", s.user, s.link.Port())
}

// Env points a process at the engine through the server: DOCKER_HOST,
// the test's ssh first on PATH, and its own runtime directory for the
// client's sockets.
func (s *Server) Env() []string {
	return []string{
		"DOCKER_HOST=" + s.Endpoint(),
		"PATH=" + filepath.Join(s.dir, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
		"XDG_RUNTIME_DIR=" + s.runtime,
	}
}

// Use points this process's engine clients (engine.New("")) at the
// server until the test ends.
func (s *Server) Use(t testing.TB) {
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// Link is the link between ssh and sshd.
func (s *Server) Link() *Link { return s.link }

// SSHConfig is the client's ssh config.
func (s *Server) SSHConfig() string { return filepath.Join(s.dir, "ssh_config") }

// Dir is the server's directory (keys and configs).
func (s *Server) Dir() string { return s.dir }

// User is the user ssh logs in as.
func (s *Server) User() string { return s.user }

// endMasters ends the ssh masters the clients started under the
// server's runtime directory.
func (s *Server) endMasters() {
	controls, _ := filepath.Glob(filepath.Join(s.runtime, "pilot-sandbox", "*.ctl"))
	for _, ctl := range controls {
		cmd := exec.Command(filepath.Join(s.dir, "bin", "ssh"), "-o", "ControlPath="+ctl, "-O", "exit", "--", "127.0.0.1")
		cmd.WaitDelay = 5 * time.Second
		cmd.Run()
	}
}

func (s *Server) read(t testing.TB, name string) string {
	data, err := os.ReadFile(filepath.Join(s.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func (s *Server) write(t testing.TB, name, data string, mode os.FileMode) {
	if err := os.WriteFile(filepath.Join(s.dir, name), []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a buffer sshd writes its log to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 1<<20 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
