package service

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// LabelVNCDir is the image label (inherited by its containers) naming the
// directory the VNC password file goes into. Images without it keep the
// file in the sandbox user's ~/.vnc.
const LabelVNCDir = "pilot.sandbox.vnc-dir"

// legacyVNCDir is where images from before LabelVNCDir read the passwords.
const legacyVNCDir = sandboxHome + "/.vnc"

// passwdDir is where the container's desktop reads its VNC passwords, and
// whether that is the legacy place, which the sandbox user owns.
func passwdDir(c Container) (dir string, legacy bool) {
	if dir := c.Labels[LabelVNCDir]; strings.HasPrefix(dir, "/") {
		return dir, false
	}
	return legacyVNCDir, true
}

func passwdPath(c Container) string {
	dir, _ := passwdDir(c)
	return dir + "/passwd"
}

// secretAlphabet keeps passwords safe in a URL fragment without escaping.
const secretAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"

// newSecret makes a sandbox's two passwords: 8 characters each, as RFB's
// VNC authentication uses only the first 8, drawn uniformly from
// secretAlphabet (about 46 bits each).
func newSecret() (vncSecret, error) {
	control, err := randomWord(rand.Reader, 8)
	if err != nil {
		return vncSecret{}, err
	}
	view, err := randomWord(rand.Reader, 8)
	if err != nil {
		return vncSecret{}, err
	}
	return vncSecret{Control: control, View: view}, nil
}

// randomWord draws n characters of secretAlphabet from src. Bytes at or
// above the largest multiple of the alphabet's size are dropped, so that
// every character is equally likely.
func randomWord(src io.Reader, n int) (string, error) {
	limit := byte(256 / len(secretAlphabet) * len(secretAlphabet))
	out := make([]byte, 0, n)
	buf := make([]byte, 2*n)
	for len(out) < n {
		if _, err := io.ReadFull(src, buf); err != nil {
			return "", err
		}
		for _, b := range buf {
			if b < limit && len(out) < n {
				out = append(out, secretAlphabet[int(b)%len(secretAlphabet)])
			}
		}
	}
	return string(out), nil
}

// passwdArchive is a tar holding x11vnc's password file. In the current
// layout it is owned by root and readable by the sandbox group only, in a
// root-owned directory, so nothing in the sandbox can change it; in the
// legacy ~/.vnc it belongs to the sandbox user, as it always did.
func passwdArchive(s vncSecret, legacy bool) *bytes.Reader {
	hdr := &tar.Header{Name: "passwd", Mode: 0o440, Uid: 0, Gid: sandboxUID, ModTime: time.Now()}
	if legacy {
		hdr.Mode, hdr.Uid = 0o600, sandboxUID
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	data := s.passwdFile()
	hdr.Size = int64(len(data))
	tw.WriteHeader(hdr)
	tw.Write(data)
	tw.Close()
	return bytes.NewReader(buf.Bytes())
}

func parsePasswdFile(data string) (vncSecret, bool) {
	lines := strings.Split(strings.TrimSpace(data), "\n")
	var s vncSecret
	for i, l := range lines {
		l = strings.TrimSpace(l)
		switch {
		case i == 0:
			s.Control = l
		case l == "__BEGIN_VIEWONLY__" && i+1 < len(lines):
			s.View = strings.TrimSpace(lines[i+1])
		}
	}
	return s, s.Control != "" && s.View != ""
}

// secretKey names the run of a container a secret belongs to: every start
// installs new passwords, so a secret remembered for an earlier run (say,
// before another sidecar or a command-line start restarted the container)
// must not be handed out.
type secretKey struct {
	id      string
	started time.Time
}

func keyOf(c Container) secretKey { return secretKey{id: c.ID, started: c.StartedAt} }

func (m *Manager) setSecret(b *box, key secretKey, s vncSecret) {
	b.mu.Lock()
	b.secret, b.secretOf = s, key
	b.mu.Unlock()
}

// secretFor returns the VNC passwords of a running container: remembered
// for this run of it, or read back from the container (after the sidecar
// restarted, or another process started it).
func (m *Manager) secretFor(ctx context.Context, b *box, c Container) (vncSecret, error) {
	b.mu.Lock()
	s, of := b.secret, b.secretOf
	b.mu.Unlock()
	if of == keyOf(c) && of.id != "" {
		return s, nil
	}
	res, err := m.docker.Exec(ctx, c.ID, ExecSpec{
		Cmd: []string{"cat", passwdPath(c)}, User: sandboxUser, Timeout: 10 * time.Second, MaxOutput: 4096,
	})
	if err != nil {
		return vncSecret{}, fmt.Errorf("read VNC password: %w", err)
	}
	s, ok := parsePasswdFile(string(res.Stdout))
	if res.ExitCode != 0 || !ok {
		return vncSecret{}, errors.New("the sandbox has no VNC password file")
	}
	m.setSecret(b, keyOf(c), s)
	return s, nil
}
