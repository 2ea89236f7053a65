package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// The engine is chosen as the docker CLI chooses it, so that the sidecar
// talks to the engine `docker ps` shows: DOCKER_HOST first; then the
// context DOCKER_CONTEXT names, or else the config's currentContext
// (`docker context use`); then the default, which for the sidecar is the
// first socket found in the usual places (findSocket). The CLI's own
// flags (--host, --context) are the CLI's, and have no equivalent here.

// defaultContext is the docker CLI's name for "no context": DOCKER_HOST,
// or the platform's default socket.
const defaultContext = "default"

// maxContextFile bounds what is read of the CLI's config and a context's
// metadata: both are a few hundred bytes.
const maxContextFile = 1 << 20

// choice is the engine chosen and why.
type choice struct {
	endpoint string
	// source says where the endpoint came from, for doctor: "DOCKER_HOST",
	// `docker context "NAME"`, or the socket found.
	source  string
	fromEnv bool // from DOCKER_HOST: the library reads the TLS settings too
	// tls is the directory of a context's TLS files (ca.pem, cert.pem,
	// key.pem), when it has them.
	tls string
	err error // the context named cannot be used
}

// chooseEngine picks the engine as the docker CLI would.
func chooseEngine() choice {
	if host := os.Getenv("DOCKER_HOST"); host != "" {
		return choice{endpoint: host, source: "DOCKER_HOST", fromEnv: true}
	}
	dir := dockerConfigDir()
	name := os.Getenv("DOCKER_CONTEXT")
	if name == "" {
		name = currentContext(dir)
	}
	if name == "" || name == defaultContext {
		return choice{endpoint: findSocket(), source: "the Docker socket found on this machine"}
	}
	host, tlsDir, err := readContext(dir, name)
	c := choice{endpoint: host, source: fmt.Sprintf("docker context %q", name), tls: tlsDir, err: err}
	if err != nil {
		// Every call then says what is wrong with the context, rather
		// than quietly using another engine than the CLI's.
		c.endpoint = "context " + name
	}
	return c
}

// dockerConfigDir is the docker CLI's configuration directory:
// $DOCKER_CONFIG, or ~/.docker.
func dockerConfigDir() string {
	if dir := os.Getenv("DOCKER_CONFIG"); dir != "" {
		return dir
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".docker")
}

// currentContext is the config's currentContext; "" when there is no
// config, or it cannot be read (the CLI then uses the default too).
func currentContext(dir string) string {
	var cfg struct {
		CurrentContext string `json:"currentContext"`
	}
	if dir == "" || readJSON(filepath.Join(dir, "config.json"), &cfg) != nil {
		return ""
	}
	return cfg.CurrentContext
}

// readContext reads a context's Docker endpoint from the CLI's context
// store: contexts/meta/<sha256 of the name>/meta.json, and its TLS files
// under contexts/tls/<same>/docker when it has any.
func readContext(dir, name string) (host, tlsDir string, err error) {
	if dir == "" {
		return "", "", fmt.Errorf("docker context %q: no home directory to find it in", name)
	}
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:])
	var meta struct {
		Endpoints map[string]struct {
			Host          string
			SkipTLSVerify bool
		}
	}
	file := filepath.Join(dir, "contexts", "meta", id, "meta.json")
	if err := readJSON(file, &meta); err != nil {
		return "", "", fmt.Errorf("docker context %q (DOCKER_CONTEXT, or currentContext in %s): %w",
			name, filepath.Join(dir, "config.json"), err)
	}
	ep, ok := meta.Endpoints["docker"]
	if !ok || ep.Host == "" {
		return "", "", fmt.Errorf("docker context %q has no Docker endpoint (%s)", name, file)
	}
	tlsDir = filepath.Join(dir, "contexts", "tls", id, "docker")
	if _, err := os.Stat(filepath.Join(tlsDir, "ca.pem")); err != nil {
		tlsDir = ""
	}
	if ep.SkipTLSVerify {
		return "", "", fmt.Errorf("docker context %q skips TLS verification, which pilot-sandbox does not do: give the context the engine's CA", name)
	}
	return ep.Host, tlsDir, nil
}

// readJSON decodes a small JSON file.
func readJSON(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxContextFile))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// remoteEndpoint says whether an endpoint is an engine on another machine:
// ssh://, or TCP to an address that is not this machine's loopback. The
// ports such an engine publishes on its 127.0.0.1 are not this machine's,
// and its containers' addresses are not routed here.
func remoteEndpoint(endpoint string) bool {
	if endpoint != "" && !strings.Contains(endpoint, "://") {
		endpoint = "tcp://" + endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "ssh":
		return true
	case "tcp", "http", "https":
		host := u.Hostname()
		if host == "localhost" {
			return false
		}
		ip := net.ParseIP(host)
		return ip == nil || !ip.IsLoopback()
	}
	return false
}
