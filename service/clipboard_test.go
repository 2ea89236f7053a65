package service_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/internal/rfbtest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// clipboardRounds is how many times the sandbox copies for a new viewer.
const clipboardRounds = 20

// clipboardBound is how long a viewer waits for text copied in the
// sandbox. x11vnc 0.9.16 on its own sends the sandbox's selections only
// once 15 s have passed since the last viewer connected (its sel_waittime),
// so a viewer that connects and sees a copy made right away waits 15 s or
// more; what pilot-clipboard pushes came within 1.1 s at worst (median
// 0.3 s) on 2 CPUs with a load average near 60.
const clipboardBound = 8 * time.Second

// clipboardSettle is how long a viewer watches for anything sent after a
// copy: x11vnc polled the selections about every 2 s when it did.
const clipboardSettle = 3 * time.Second

// TestSandboxClipboardReachesTheViewer copies text in the sandbox right
// after a viewer connects, as a user who opens the viewer and copies
// something sees it, clipboardRounds times: half with xclip run by an exec
// (a program of the sandbox user), half with the desktop agent's
// clipboard tool. Each time a new viewer, connected as the browser's is
// (a WebSocket through websockify), must get the text in a ServerCutText.
func TestSandboxClipboardReachesTheViewer(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	ctx := context.Background()
	st, err := m.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	// Round 0 comes right after the start: before x11vnc served its
	// clients in threads, a copy then reached no viewer while the
	// readiness probe's client was still being dropped (3 starts of 4).
	var misses []string
	for i := range clipboardRounds {
		text := fmt.Sprintf("copied in the sandbox, round %d", i)
		copyText := copyByExec
		if i%2 == 1 {
			copyText = copyByAgent
		}
		if err := copiedToNewViewer(t, m, dir, st.ViewerURL, text, copyText, text, 0); err != nil {
			misses = append(misses, fmt.Sprintf("round %d: %v", i, err))
		}
	}
	if len(misses) > 0 {
		t.Errorf("%d of %d copies in the sandbox did not reach a new viewer within %v:\n%s",
			len(misses), clipboardRounds, clipboardBound, strings.Join(misses, "\n"))
	}
}

// copiedToNewViewer connects a viewer, copies text in the sandbox with
// copyText, and waits for the viewer to get want. Then, for settle, nothing
// else may come: a second, different form of the same copy would replace it
// on the viewer's clipboard.
func copiedToNewViewer(t *testing.T, m *service.Manager, dir, viewerURL, text string,
	copyText func(*testing.T, *service.Manager, string, string), want string, settle time.Duration) error {
	viewer, err := rfbtest.DialViewer(viewerURL, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer viewer.Close()
	copyText(t, m, dir, text)
	if err := awaitCutText(viewer, want, clipboardBound); err != nil {
		return err
	}
	if settle == 0 {
		return nil
	}
	if later, err := viewer.ReadCutText(settle); err == nil && later != want {
		return fmt.Errorf("then %q came", later)
	}
	return nil
}

// awaitCutText reads the viewer's clipboard messages until one says want,
// for at most bound; others (an earlier copy sent again) are passed over.
func awaitCutText(viewer *rfbtest.Conn, want string, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	var got []string
	for {
		text, err := viewer.ReadCutText(time.Until(deadline))
		if err != nil {
			return fmt.Errorf("%w (got %q)", err, got)
		}
		if text == want {
			return nil
		}
		got = append(got, text)
	}
}

// copyByExec copies as a program in the sandbox does: xclip as the
// sandbox user.
func copyByExec(t *testing.T, m *service.Manager, dir, text string) {
	t.Helper()
	if out := exec(t, m, dir, "printf %s '"+text+"' | xclip -selection clipboard -in"); out.ExitCode != 0 {
		t.Fatalf("xclip: %+v", out)
	}
}

// copyByAgent copies with the desktop agent's clipboard tool.
func copyByAgent(t *testing.T, m *service.Manager, dir, text string) {
	t.Helper()
	d, err := m.Desktop(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SetClipboard(context.Background(), text); err != nil {
		t.Fatal(err)
	}
}

// nonLatin1 mixes Latin-1 with characters RFB's clipboard cannot carry.
const nonLatin1 = "héllo wörld — 日本語 ✓"

// TestClipboardCharactersBothWays: RFB's clipboard is Latin-1. Text copied
// in the sandbox reaches a viewer as Latin-1, with '?' for each character
// beyond it, and nothing else follows it (x11vnc's own polling of the
// selections once sent the owner's raw UTF-8 a second later). Latin-1 text
// a viewer pastes reads back as the same characters, in UTF-8, from the
// sandbox's CLIPBOARD and PRIMARY, and through the agent's clipboard tool.
func TestClipboardCharactersBothWays(t *testing.T) {
	m, docker := dockertest.Manager(t, nil)
	dir := dockertest.Project(t, docker)
	st, err := m.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("sandbox to viewer", func(t *testing.T) {
		want := "h\xe9llo w\xf6rld ? ??? ?" // Latin-1 bytes, as sent
		if err := copiedToNewViewer(t, m, dir, st.ViewerURL, nonLatin1, copyByExec, want, clipboardSettle); err != nil {
			t.Error(err)
		}
	})
	t.Run("viewer to sandbox", func(t *testing.T) {
		pastedByViewer(t, m, dir, st.ViewerURL, "h\xe9llo w\xf6rld \xa9", "héllo wörld ©")
		// Again, once pilot-clipboard has taken the selections over:
		// x11vnc takes them back for the next paste.
		pastedByViewer(t, m, dir, st.ViewerURL, "gr\xfc\xdfe \xbd", "grüße ½")
	})
}

// pastedByViewer sends Latin-1 text from a viewer and checks that the
// sandbox's programs read want from both selections.
func pastedByViewer(t *testing.T, m *service.Manager, dir, viewerURL, latin1, want string) {
	viewer, err := rfbtest.DialViewer(viewerURL, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer viewer.Close()
	if err := viewer.CutText(latin1); err != nil {
		t.Fatal(err)
	}
	for _, sel := range []string{"clipboard", "primary"} {
		var got string
		pollUntil(t, sel+" reads "+want, func() bool {
			got = exec(t, m, dir, "xclip -o -selection "+sel).Stdout
			return got == want
		})
		if got != want {
			t.Errorf("%s: got %q, want %q", sel, got, want)
		}
	}
	d, err := m.Desktop(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := d.Clipboard(context.Background()); err != nil || got != want {
		t.Errorf("the agent's clipboard: %q, %v; want %q", got, err, want)
	}
}
