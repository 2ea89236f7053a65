package recording

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The tests of pilot-record (resources/docker/recorder/record.sh) on the
// host, with a stand-in ffmpeg: its arguments, the cookie on stdin, and
// the end of stdin as the stop.

const recordScript = "../resources/docker/recorder/record.sh"

func TestPilotRecordRefusesBadArguments(t *testing.T) {
	for _, argv := range [][]string{
		{}, {"5", "60", "46"}, {"five", "60", "46", ":99"}, {"5", "-1", "46", ":99"},
		{"5", "60", "46", "99"}, {"5", "60", "4 6", ":99"}, {"5", "60", "46", ":99", "x"},
	} {
		cmd := exec.Command("sh", append([]string{recordScript}, argv...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "usage:") {
			t.Errorf("%q: %v, %q; want exit 2 and the usage", argv, err, stderr.String())
		}
	}
}

func TestPilotRecordTakesTheCookieAndStopsAtTheEndOfStdin(t *testing.T) {
	dir := t.TempDir()
	// The stand-in ffmpeg says what it got, then records until SIGTERM,
	// when it writes its end, as ffmpeg does.
	fake := "#!/bin/sh\nprintf 'args:%s\\n' \"$*\"\nprintf 'cookie:%s\\n' \"$(cat \"$XAUTHORITY\")\"\n" +
		"trap 'echo end; exit 0' TERM\nwhile :; do sleep 0.05; done\n"
	if err := os.WriteFile(filepath.Join(dir, "ffmpeg"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", recordScript, "5", "60", "6", ":99")
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "PILOT_RECORD_DIR="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write([]byte("SECRET")); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	select {
	case err := <-ended:
		t.Fatalf("pilot-record ended with its stdin open: %v", err)
	case <-time.After(300 * time.Millisecond): // recording, as it should while stdin is open
	}
	stdin.Close()
	if err := <-ended; err != nil {
		t.Fatalf("pilot-record: %v; output %q", err, out.String())
	}
	got := out.String()
	for _, want := range []string{"-framerate 5 -i :99", "-t 60", "cookie:SECRET", "end"} {
		if !strings.Contains(got, want) {
			t.Errorf("output %q lacks %q", got, want)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, "pilot-record-xauth"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the cookie file: %v, %v; want mode 0600", fi, err)
	}
}
