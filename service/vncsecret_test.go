package service

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/desktop"
)

// Every byte value once: the accepted ones must give every character of the
// alphabet equally often, so that no password is likelier than another.
func TestPasswdArchiveCannotBeChangedFromInside(t *testing.T) {
	for _, tc := range []struct {
		legacy   bool
		uid      int
		mode     int64
		describe string
	}{
		{false, 0, 0o440, "root's, readable by the sandbox group"},
		{true, desktop.UID, 0o600, "the sandbox user's, as older images expect"},
	} {
		tr := tar.NewReader(desktop.PasswdArchive(desktop.Secret{Control: "c", View: "v"}, tc.legacy, desktop.UID))
		hdr, err := tr.Next()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		if hdr.Name != "passwd" || hdr.Uid != tc.uid || hdr.Gid != desktop.UID || hdr.Mode != tc.mode {
			t.Errorf("legacy=%v: %s uid %d gid %d mode %o, want %s", tc.legacy, hdr.Name, hdr.Uid, hdr.Gid, hdr.Mode, tc.describe)
		}
		if string(data) != "c\n__BEGIN_VIEWONLY__\nv\n" {
			t.Errorf("legacy=%v: file %q", tc.legacy, data)
		}
		if _, err := tr.Next(); !errors.Is(err, io.EOF) {
			t.Errorf("legacy=%v: more than one file: %v", tc.legacy, err)
		}
	}
}

// Another process (a second sidecar, the command line) may restart the
// container with passwords of its own: the next status must hand out those,
// not the ones this manager installed for an earlier run.
func TestPasswordsFollowEveryRunOfTheContainer(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	ctx := context.Background()
	first, err := h.m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	theirs := desktop.Secret{Control: "Theirs12", View: "TheirsV2"}
	h.docker.StopContainer(ctx, first.ContainerID, 0)
	h.docker.CopyTo(ctx, first.ContainerID, "/etc/pilot-sandbox/vnc", desktop.PasswdArchive(theirs, false, desktop.DesktopGID))
	h.docker.StartContainer(ctx, first.ContainerID)

	st, err := h.m.Status(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(st.ViewerURL, "password="+theirs.Control) || !strings.HasSuffix(st.WatchURL, "password="+theirs.View) {
		t.Errorf("after another process restarted the sandbox: viewer %s, watch %s", st.ViewerURL, st.WatchURL)
	}
}

func TestContainersOfOlderImagesKeepTheirPasswordsInHome(t *testing.T) {
	h := newHarness(t, nil)
	dir := project(t)
	c := h.docker.addContainer(dir, false, 0, desktop.Secret{Control: "oldctrl1", View: "oldview1"})
	st, err := h.m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	secret, ok := desktop.ParsePasswdFile(h.docker.uploaded(c.ID, desktop.LegacyVNCDir+"/passwd"))
	if !ok || secret.Control == "oldctrl1" || !strings.HasSuffix(st.ViewerURL, "password="+secret.Control) {
		t.Errorf("legacy container: installed %+v (%v), viewer %s", secret, ok, st.ViewerURL)
	}
}
