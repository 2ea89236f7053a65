//go:build linux

package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// attack is an input to `pilot-sandbox serve` that once took the sidecar's
// memory (issue 16, "Unbounded requests").
type attack struct {
	name    string
	framing string
	input   func(w io.Writer) error // written to stdin as it is made, never held whole
	unread  bool                    // nobody reads the sidecar's stdout
	// reason is what stderr must say when the sidecar ends the connection
	// by itself ("" when the input's end ends it).
	reason string
}

// maxAttackRSS is the most memory the sidecar may take under any attack
// below. It runs in under 50 MB; the attacks took 1.3 to 2.9 GB.
const maxAttackRSS = 200 << 20

// TestServeBoundsMemory runs the real sidecar against each attack and
// checks its peak resident memory (the kernel's VmHWM).
func TestServeBoundsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("feeds the sidecar hundreds of megabytes and waits out its stall bound")
	}
	path30MB := `{"jsonrpc":"2.0","id":1,"method":"sandbox/status","params":{"projectPath":"/`
	for _, a := range []attack{
		{name: "an LSP header line of 640 MB", framing: "lsp", input: func(w io.Writer) error {
			return write(w, "X-Pad: ", repeated('a', 640<<20), "\r\nContent-Length: 2\r\n\r\n{}")
		}, reason: "header line"},
		{name: "ten requests with a 30 MB projectPath (ndjson)", framing: "ndjson", input: func(w io.Writer) error {
			for range 10 {
				if err := write(w, path30MB, repeated('a', 30<<20), "\"}}\n"); err != nil {
					return err
				}
			}
			return nil
		}},
		{name: "ten requests with a 30 MB projectPath (lsp)", framing: "lsp", input: func(w io.Writer) error {
			body := len(path30MB) + 30<<20 + len(`"}}`)
			for range 10 {
				if err := write(w, "Content-Length: ", strconv.Itoa(body), "\r\n\r\n", path30MB, repeated('a', 30<<20), `"}}`); err != nil {
					return err
				}
			}
			return nil
		}},
		{name: "a million invalid lines while the client reads nothing", framing: "ndjson", unread: true, input: func(w io.Writer) error {
			return write(w, strings.Repeat("x\n", 1_000_000))
		}, reason: "stopped reading"},
	} {
		t.Run(a.name, func(t *testing.T) {
			rss, replies, stderr := runAttack(t, a)
			t.Logf("peak RSS %.1f MiB, %d bytes of replies", float64(rss)/(1<<20), replies)
			if rss > maxAttackRSS {
				t.Errorf("peak RSS %d MiB, more than %d MiB", rss>>20, maxAttackRSS>>20)
			}
			if a.reason != "" && !strings.Contains(stderr, a.reason) {
				t.Errorf("stderr does not say why the connection was closed (%q); it ends:\n%s", a.reason, stderr[max(0, len(stderr)-2000):])
			}
		})
	}
}

// runAttack serves one attack to its end and returns the sidecar's peak
// resident memory, how many bytes it wrote to stdout, and the end of its
// stderr.
func runAttack(t *testing.T, a attack) (rss int64, replies int64, stderr string) {
	cmd := exec.Command(binary, "serve", "--framing", a.framing)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
	errTail := &tailBuffer{max: 64 << 10}
	cmd.Stderr = errTail
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	cmd.Stdout = outW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	counted := make(chan int64, 1)
	if !a.unread {
		go func() { n, _ := io.Copy(io.Discard, outR); counted <- n }()
	}
	go func() {
		a.input(stdin) // fails with EPIPE once the sidecar has closed the connection
		stdin.Close()
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	rss, ended := watchPeakRSS(cmd.Process.Pid, exited, 3*time.Minute)
	if !ended {
		cmd.Process.Kill()
		<-exited
		t.Errorf("the sidecar was still running after 3 minutes: killed")
	}
	if !a.unread {
		replies = <-counted
	}
	return rss, replies, errTail.String()
}

// watchPeakRSS reads the process's peak resident memory (VmHWM) until it
// exits, or the time is up (ended false). Its rusage would not do: Go
// starts a child in the test's own memory (CLONE_VM), and the kernel counts
// the test's peak as the child's.
func watchPeakRSS(pid int, exited <-chan error, limit time.Duration) (peak int64, ended bool) {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(limit)
	for {
		if kb := vmHWM(pid); kb > peak {
			peak = kb
		}
		select {
		case <-exited:
			return peak << 10, true
		case <-timeout:
			return peak << 10, false
		case <-tick.C:
		}
	}
}

// vmHWM is the process's peak resident memory in KiB, 0 once it is gone.
func vmHWM(pid int) int64 {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb
		}
	}
	return 0
}

// tailBuffer keeps the last max bytes written to it: the sidecar's stderr
// under attack is large, and held whole it would grow the test instead.
type tailBuffer struct {
	max int
	mu  sync.Mutex // guards buf
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*b.max {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf[max(0, len(b.buf)-b.max):])
}

// repeated is n bytes of b, made as they are written.
func repeated(b byte, n int) chunked { return chunked{b: b, n: n} }

type chunked struct {
	b byte
	n int
}

// write writes strings and repeated bytes in turn.
func write(w io.Writer, parts ...any) error {
	for _, p := range parts {
		var err error
		switch p := p.(type) {
		case string:
			_, err = io.WriteString(w, p)
		case chunked:
			chunk := bytes.Repeat([]byte{p.b}, 64<<10)
			for left := p.n; left > 0 && err == nil; left -= len(chunk) {
				_, err = w.Write(chunk[:min(left, len(chunk))])
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}
