package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseSSH(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want sshTarget
		err  string
	}{
		{in: "ssh://host", want: sshTarget{host: "host"}},
		{in: "ssh://me@host", want: sshTarget{user: "me", host: "host"}},
		{in: "ssh://me@host:2222", want: sshTarget{user: "me", host: "host", port: "2222"}},
		{in: "ssh://me@[::1]:22", want: sshTarget{user: "me", host: "::1", port: "22"}},
		{in: "ssh://me@host/", want: sshTarget{user: "me", host: "host"}},
		{in: "ssh://me:secret@host", err: "has a password"},
		{in: "ssh://", err: "names no host"},
		{in: "ssh://-oProxyCommand=x", err: "may not start with '-'"},
		{in: "ssh://-l@host", err: "may not start with '-'"},
		{in: "ssh://host/var/run/docker.sock", err: "no path or query"},
		{in: "ssh://host?x=1", err: "no path or query"},
		{in: "ssh://host:0", err: "port must be"},
		{in: "ssh://host:99999", err: "port must be"},
		{in: "tcp://host:2375", err: "not an ssh://"},
	} {
		got, err := parseSSH(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: err %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error shows the password: %v", tc.in, err)
		}
	}
}

func TestSSHArgs(t *testing.T) {
	d := &sshDialer{target: sshTarget{user: "me", host: "box", port: "2222"}, control: "/run/x/100%.ctl"}
	got := d.args([]string{"-O", "check"}, "docker", "system", "dial-stdio")
	// The destination comes after "--", so that nothing in it is read as
	// an option, and the remote command after it.
	if i := slices.Index(got, "--"); i < 0 || got[i+1] != "box" || !slices.Equal(got[i+2:], []string{"docker", "system", "dial-stdio"}) {
		t.Errorf("args %q", got)
	}
	for _, want := range []string{"BatchMode=yes", "ControlMaster=auto", "ControlPath=/run/x/100%%.ctl", "ControlPersist=600"} {
		if !slices.Contains(got, want) {
			t.Errorf("args %q lack %s", got, want)
		}
	}
	joined := strings.Join(got, " ")
	if !strings.Contains(joined, "-p 2222") || !strings.Contains(joined, "-l me") || !strings.Contains(joined, "-O check --") {
		t.Errorf("args %q", got)
	}
}

func TestRemoteEndpoint(t *testing.T) {
	for endpoint, want := range map[string]bool{
		"unix:///var/run/docker.sock": false,
		"npipe:////./pipe/docker":     false,
		"tcp://127.0.0.1:2375":        false,
		"127.0.0.1:2375":              false,
		"tcp://localhost:2375":        false,
		"tcp://[::1]:2375":            false,
		"tcp://10.0.0.5:2376":         true,
		"build-box:2375":              true,
		"https://docker.example:2376": true,
		"ssh://me@127.0.0.1":          true, // another machine's way in, even to this one
	} {
		if got := remoteEndpoint(endpoint); got != want {
			t.Errorf("remoteEndpoint(%q) = %v, want %v", endpoint, got, want)
		}
	}
}

// writeContext makes a docker context in the CLI's store under dir.
func writeContext(t *testing.T, dir, name, meta string) {
	sum := sha256.Sum256([]byte(name))
	path := filepath.Join(dir, "contexts", "meta", hex.EncodeToString(sum[:]), "meta.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(meta), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestChooseEngineAsTheDockerCLI(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONTEXT", "")
	writeContext(t, dir, "big", `{"Name":"big","Endpoints":{"docker":{"Host":"ssh://me@big-box","SkipTLSVerify":false}}}`)
	writeContext(t, dir, "desk", `{"Name":"desk","Endpoints":{"docker":{"Host":"unix:///home/me/.docker/desktop/docker.sock"}}}`)
	writeContext(t, dir, "broken", `{"Name":`)
	writeContext(t, dir, "insecure", `{"Name":"insecure","Endpoints":{"docker":{"Host":"tcp://x:2376","SkipTLSVerify":true}}}`)
	config := func(current string) {
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths":{},"currentContext":"`+current+`"}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	config("big")
	if c := chooseEngine(); c.endpoint != "ssh://me@big-box" || c.err != nil || !strings.Contains(c.source, `"big"`) {
		t.Errorf("currentContext big: %+v", c)
	}
	t.Setenv("DOCKER_CONTEXT", "desk") // the variable wins over the config
	if c := chooseEngine(); c.endpoint != "unix:///home/me/.docker/desktop/docker.sock" || c.err != nil {
		t.Errorf("DOCKER_CONTEXT desk: %+v", c)
	}
	t.Setenv("DOCKER_HOST", "tcp://elsewhere:2375") // and DOCKER_HOST over both
	if c := chooseEngine(); c.endpoint != "tcp://elsewhere:2375" || !c.fromEnv || c.source != "DOCKER_HOST" {
		t.Errorf("DOCKER_HOST: %+v", c)
	}
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONTEXT", "default")
	if c := chooseEngine(); !strings.HasPrefix(c.endpoint, "unix://") || c.err != nil {
		t.Errorf("the default context: %+v", c)
	}
	for _, name := range []string{"broken", "insecure", "missing"} {
		t.Setenv("DOCKER_CONTEXT", name)
		c := chooseEngine()
		if c.err == nil || !strings.Contains(c.err.Error(), name) {
			t.Errorf("context %s: %+v", name, c)
		}
		// Every call says what is wrong rather than using another engine.
		if _, err := New("").connect(t.Context()); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("context %s: the client's call says %v", name, err)
		}
	}
}
