package shell

import (
	"errors"
	"os/exec"
	"testing"
)

// TestForegroundArgvKeepsArguments runs the wrapper with this machine's
// bash, choom and timeout, as the sandbox's: argv reaches the program as
// given, and its exit status comes back; on a terminal too
// (ForegroundTerminal).
func TestForegroundArgvKeepsArguments(t *testing.T) {
	for _, tool := range []string{"bash", "choom", "timeout"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s here: %v", tool, err)
		}
	}
	for _, tc := range []struct {
		argv []string
		out  string
		code int
	}{
		{[]string{"printf", "%s|", "a b", "c"}, "a b|c|", 0},
		{[]string{"printf", "%s|", "$HOME", "*", "`id`", "$(id)", "'", "\"", ""}, "$HOME|*|`id`|$(id)|'|\"||", 0},
		{[]string{"sh", "-c", "exit 7"}, "", 7},
		{[]string{"no-such-program-here"}, "", 127},
	} {
		for _, argv := range [][]string{ForegroundArgv(tc.argv, 10), ForegroundTerminal(tc.argv, 10)} {
			cmd := exec.Command(argv[0], argv[1:]...)
			out, err := cmd.Output()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.out || code != tc.code {
				t.Errorf("%q: %q, exit %d; want %q, exit %d", argv, out, code, tc.out, tc.code)
			}
		}
	}
}
