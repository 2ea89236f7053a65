package desktop

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Secret holds a sandbox's two VNC passwords. RFB's VNC authentication
// uses only the first 8 characters of a password, so each is exactly 8.
type Secret struct {
	Control string // full control
	View    string // view only, enforced by the VNC server
}

// PasswdFile renders the secret in x11vnc's -passwdfile format: the first line
// is the full-control password, those after __BEGIN_VIEWONLY__ are view-only.
func (s Secret) PasswdFile() []byte {
	return []byte(s.Control + "\n__BEGIN_VIEWONLY__\n" + s.View + "\n")
}

// ViewerURLs builds the addresses of a running sandbox's desktop on its noVNC
// port: viewer takes control, watch connects with the view-only password.
// The password travels in the fragment, which a browser never sends.
//
// The page is the sandbox's own viewer (resources/docker/sandbox/viewer),
// which works in any frame, when the container says it has one (LabelViewer);
// containers made from older images get noVNC's vnc.html, which takes the
// same fragment parameters.
func ViewerURLs(wsPort int, viewerPath string, s Secret) (viewer, watch string) {
	if wsPort == 0 {
		return "", ""
	}
	page, common := "vnc.html", []string{"autoconnect=true", "reconnect=true", "resize=scale"}
	if viewerPathPattern.MatchString(viewerPath) {
		page, common = viewerPath, nil
	}
	build := func(extra []string, password string) string {
		params := append(slices.Clone(common), extra...)
		if password != "" {
			params = append(params, "password="+url.PathEscape(password))
		}
		return fmt.Sprintf("http://127.0.0.1:%d/%s#%s", wsPort, page, strings.Join(params, "&"))
	}
	return build(nil, s.Control), build([]string{"view_only=true"}, s.View)
}

// viewerPathPattern is what a LabelViewer value must look like to be used:
// a relative path of plain file names.
var viewerPathPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*\.html$`)

// secretAlphabet keeps passwords safe in a URL fragment without escaping.
const secretAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"

// NewSecret makes a sandbox's two passwords: 8 characters each, as RFB's
// VNC authentication uses only the first 8, drawn uniformly from
// secretAlphabet (about 46 bits each).
func NewSecret() (Secret, error) {
	control, err := randomWord(rand.Reader, 8)
	if err != nil {
		return Secret{}, err
	}
	view, err := randomWord(rand.Reader, 8)
	if err != nil {
		return Secret{}, err
	}
	return Secret{Control: control, View: view}, nil
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

// PasswdArchive is a tar holding x11vnc's password file. In the current
// layout it is owned by root and readable by group gid only (the desktop's
// user's: DesktopGID, or UID in images whose desktop runs as User), in a
// root-owned directory, so nothing in the sandbox can change it; in the
// legacy ~/.vnc it belongs to the sandbox user, as it always did.
func PasswdArchive(s Secret, legacy bool, gid int) *bytes.Reader {
	hdr := &tar.Header{Name: "passwd", Mode: 0o440, Uid: 0, Gid: gid, ModTime: time.Now()}
	if legacy {
		hdr.Mode, hdr.Uid = 0o600, UID
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	data := s.PasswdFile()
	hdr.Size = int64(len(data))
	tw.WriteHeader(hdr)
	tw.Write(data)
	tw.Close()
	return bytes.NewReader(buf.Bytes())
}

// ParsePasswdFile reads x11vnc's password file back.
func ParsePasswdFile(data string) (Secret, bool) {
	lines := strings.Split(strings.TrimSpace(data), "\n")
	var s Secret
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

// LegacyVNCDir is where images made before the VNC directory label read the
// passwords: the sandbox user's own ~/.vnc.
const LegacyVNCDir = Home + "/.vnc"
