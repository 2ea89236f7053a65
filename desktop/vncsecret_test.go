package desktop

import (
	"bytes"
	"regexp"
	"testing"
)

func TestRandomWordDrawsEveryCharacterEquallyOften(t *testing.T) {
	var every []byte
	for i := range 256 {
		every = append(every, byte(i))
	}
	accepted := 256 / len(secretAlphabet) * len(secretAlphabet)
	// (twice over: it reads ahead)
	word, err := randomWord(bytes.NewReader(bytes.Repeat(every, 2)), accepted)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[rune]int{}
	for _, r := range word {
		counts[r]++
	}
	for _, r := range secretAlphabet {
		if counts[r] != accepted/len(secretAlphabet) {
			t.Errorf("%q drawn %d times, want %d", r, counts[r], accepted/len(secretAlphabet))
		}
	}
}

func TestViewerURLs(t *testing.T) {
	secret := Secret{Control: "AAAAbbbb", View: "CCCCdddd"}
	for _, tc := range []struct {
		name, label           string
		secret                Secret
		wantViewer, wantWatch string
	}{
		{"the sandbox's viewer", "pilot/viewer.html", secret,
			"http://127.0.0.1:6080/pilot/viewer.html#password=AAAAbbbb",
			"http://127.0.0.1:6080/pilot/viewer.html#view_only=true&password=CCCCdddd"},
		{"an older image: vnc.html", "", secret,
			"http://127.0.0.1:6080/vnc.html#autoconnect=true&reconnect=true&resize=scale&password=AAAAbbbb",
			"http://127.0.0.1:6080/vnc.html#autoconnect=true&reconnect=true&resize=scale&view_only=true&password=CCCCdddd"},
		{"a label that is not a plain path", "../x.html?a#b", secret,
			"http://127.0.0.1:6080/vnc.html#autoconnect=true&reconnect=true&resize=scale&password=AAAAbbbb",
			"http://127.0.0.1:6080/vnc.html#autoconnect=true&reconnect=true&resize=scale&view_only=true&password=CCCCdddd"},
		{"passwords unknown: the page asks", "pilot/viewer.html", Secret{},
			"http://127.0.0.1:6080/pilot/viewer.html#",
			"http://127.0.0.1:6080/pilot/viewer.html#view_only=true"},
	} {
		viewer, watch := ViewerURLs(6080, tc.label, tc.secret)
		if viewer != tc.wantViewer || watch != tc.wantWatch {
			t.Errorf("%s:\n got %s\n     %s\nwant %s\n     %s", tc.name, viewer, watch, tc.wantViewer, tc.wantWatch)
		}
	}
	if v, w := ViewerURLs(0, "pilot/viewer.html", secret); v != "" || w != "" {
		t.Errorf("no port: %q %q", v, w)
	}
}

func TestSecretsAreRandomAndURLSafe(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		s, err := NewSecret()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{s.Control, s.View} {
			if !regexp.MustCompile(`^[A-Za-z0-9]{8}$`).MatchString(p) || seen[p] {
				t.Fatalf("password %q is not 8 fresh URL-safe characters", p)
			}
			seen[p] = true
		}
		back, ok := ParsePasswdFile(string(s.PasswdFile()))
		if !ok || back != s {
			t.Fatalf("password file round trip: %+v", back)
		}
	}
}
