package egress_test

import (
	"os"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/egress"
)

// TestAptAndGit: apt-get against deb.debian.org (which this machine's
// containers reach over HTTP), asked and denied, then allowed: it installs
// git and OpenSSH's client through the path (as root, which in a sandbox
// holds no capability: apt keeps root for its downloads and a cache of its
// own, and openssh-client's set-group-ID step fails, leaving ssh in place). Then git over HTTPS and SSH
// to the test's servers, allowed and denied, each denial saying why in
// git's own output.
func TestAptAndGit(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	s := newSandboxNet(t)
	no := s.judge.Ask("deb.debian.org")
	go func() {
		<-s.judge.asked
		no <- egress.Decision{By: "user", Reason: "pilot-sandbox: the user said no to deb.debian.org:80"}
	}()
	out, code := s.execAs("0", "apt-get -o APT::Sandbox::User=root -o Acquire::Retries=0 update 2>&1")
	if code == 0 && !strings.Contains(out, "403") || !strings.Contains(out, "pilot-sandbox: the user said no to deb.debian.org:80") {
		t.Errorf("apt-get after a no (exit %d):\n%s", code, out)
	}
	s.judge.AllowResolved("deb.debian.org")
	out, code = s.execAs("0", "set -o pipefail; mkdir -p /tmp/apt/partial && apt-get -o APT::Sandbox::User=root update -qq 2>&1 && "+
		"{ apt-get -o APT::Sandbox::User=root -o Dir::Cache::Archives=/tmp/apt install -y -qq --no-install-recommends git openssh-client 2>&1 | tail -3; "+
		"command -v git && command -v ssh; }")
	if code != 0 {
		t.Fatalf("apt-get through the path (exit %d):\n%s", code, out)
	}
	s.judge.Allow("git.allowed.test", s.server)
	s.judge.Allow("allowed.test", s.server)
	for _, c := range []struct{ command, want string }{
		{"GIT_SSL_NO_VERIFY=1 git ls-remote https://allowed.test:8443/repo.git", "https://allowed.test:8443/repo.git/info/refs not valid"},
		{"git ls-remote https://denied.test/repo.git", "403"},
		{"GIT_SSH_COMMAND='ssh -o StrictHostKeyChecking=no -o BatchMode=yes -o ConnectTimeout=10' git ls-remote ssh://git@git.denied.test/repo.git",
			"Received disconnect from 198.18."},
		{"GIT_SSH_COMMAND='ssh -o StrictHostKeyChecking=no -o BatchMode=yes -o ConnectTimeout=10' git ls-remote ssh://git@git.denied.test/repo.git",
			"pilot-sandbox blocked git.denied.test:22"},
	} {
		out, _ := s.exec(c.command + " 2>&1")
		if !strings.Contains(out, c.want) {
			t.Errorf("%s: want %q in:\n%s", c.command, c.want, out)
		}
	}
	out, _ = s.exec("GIT_SSH_COMMAND='ssh -o StrictHostKeyChecking=no -o BatchMode=yes -o ConnectTimeout=10' git ls-remote ssh://git@git.allowed.test/repo.git 2>&1")
	if strings.Contains(out, "pilot-sandbox") || strings.Contains(out, "Could not resolve") {
		t.Errorf("git over ssh to an allowed host did not reach it:\n%s", out)
	}
	t.Logf("git over ssh to the banner-only server: %s", strings.TrimSpace(out))
}

// TestNpmRegistryBehindAnInterceptingEgress: the npm registry, which this
// machine reaches only through a TLS-intercepting egress (as users behind
// a corporate proxy do), through the path: allowed, its metadata for a
// package arrives when the client trusts that egress's CA (a file the
// test passes in: npm's cafile, Python's cafile here, as no image has
// npm), and without it the client sees the interception as a certificate
// failure, not as pilot-sandbox's doing; denied, the 403 names it.
func TestNpmRegistryBehindAnInterceptingEgress(t *testing.T) {
	ca, err := os.ReadFile(egressCA)
	if err != nil {
		t.Skipf("no TLS-intercepting egress's CA here (%v)", err)
	}
	s := newSandboxNet(t)
	s.judge.AllowResolved("registry.npmjs.org")
	if out, code := s.execAs("", "cat > /tmp/egress-ca.crt <<'PEM'\n"+string(ca)+"\nPEM"); code != 0 {
		t.Fatalf("copy the CA in: %s", out)
	}
	out, _ := s.py(`
import json, ssl, urllib.request, urllib.error
def get(url, cafile=None):
    try:
        ctx = ssl.create_default_context(cafile=cafile)
        with urllib.request.urlopen(url, timeout=30, context=ctx) as r:
            return "got " + json.load(r)["name"]
    except urllib.error.HTTPError as e:
        return "%d %s" % (e.code, e.reason)
    except urllib.error.URLError as e:
        return "failed " + str(e.reason)
print("with ca:", get("https://registry.npmjs.org/left-pad", "/tmp/egress-ca.crt"))
print("without:", get("https://registry.npmjs.org/left-pad"))
print("denied:", get("https://registry.yarnpkg.com/left-pad", "/tmp/egress-ca.crt"))
`)
	for _, want := range []string{"with ca: got left-pad", "without: failed [SSL: CERTIFICATE_VERIFY_FAILED]",
		"denied: failed Tunnel connection failed: 403 pilot-sandbox blocked registry.yarnpkg.com:443"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// egressCA is the CA of this machine's TLS-intercepting egress.
const egressCA = "/usr/local/share/ca-certificates/sandboxing-egress-ca.crt"
