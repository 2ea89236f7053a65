// Package gateway is the model gateway (docs/models.md): an HTTP reverse
// proxy in the sidecar through which an agent inside a sandbox calls the
// model APIs (Anthropic's, OpenAI's) without ever holding the user's key.
//
// It owns: the per-task placeholder tokens (minted as a task starts, dead
// as it ends), the mapping of a token to its task, which paths of which
// provider go through, the headers (every credential the sandbox sent is
// stripped, the user's key added), streaming (server-sent events pass
// through unbuffered) and the count of each task's tokens.
//
// It knows nothing of sandboxes, relays, tasks or config.json: its caller
// serves it on a listener that the relays carry into a sandbox, and gives
// each lease the providers and keys the user configured. The key is in no
// log field, no error message and nothing it writes.
package gateway

import (
	"crypto/rand"
	"errors"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"

	"github.com/rs/zerolog"
)

// Providers the gateway knows, by the prefix of their paths.
const (
	Anthropic = "anthropic"
	OpenAI    = "openai"
)

// tokenPrefix starts every placeholder, so that one seen in a log or a
// file is told from a real key at a glance.
const tokenPrefix = "pilot-gw-"

// Provider is where one provider's requests go, and its key.
type Provider struct {
	// BaseURL is the API's root ("https://api.anthropic.com"); a request's
	// path (/v1/messages) is appended to its path.
	BaseURL *url.URL
	// Key returns the user's key; "" when there is none (the variable
	// KeyEnv names is unset).
	Key func() string
	// KeyEnv names where the key comes from, for the error that says it
	// is missing (never the key).
	KeyEnv string
}

// Usage is what a task's model calls used, as the responses said.
type Usage struct {
	Requests          int64 `json:"requests"`
	InputTokens       int64 `json:"inputTokens"`
	OutputTokens      int64 `json:"outputTokens"`
	CachedInputTokens int64 `json:"cachedInputTokens,omitempty"`
}

func (u *Usage) add(v Usage) {
	u.Requests += v.Requests
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.CachedInputTokens += v.CachedInputTokens
}

// Lease is one task's access: its token, its providers and its usage.
type Lease struct {
	Task      string
	token     string
	providers map[string]Provider

	mu    sync.Mutex // guards usage
	usage Usage
}

// Token is the placeholder the task's environment carries in place of a
// key.
func (l *Lease) Token() string { return l.token }

// Usage is what the lease's requests used so far.
func (l *Lease) Usage() Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.usage
}

func (l *Lease) count(u Usage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.usage.add(u)
}

// Gateway maps tokens to leases and forwards their requests. It is an
// http.Handler.
type Gateway struct {
	log   zerolog.Logger
	proxy *httputil.ReverseProxy

	mu     sync.Mutex // guards leases
	leases map[string]*Lease
}

// New returns a gateway with no lease; transport carries its requests
// out (nil: a clone of http.DefaultTransport, which honours the
// sidecar's HTTPS_PROXY).
func New(transport http.RoundTripper, log zerolog.Logger) *Gateway {
	if transport == nil {
		transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	g := &Gateway{log: log, leases: map[string]*Lease{}}
	g.proxy = &httputil.ReverseProxy{
		Rewrite:        rewrite,
		Transport:      transport,
		FlushInterval:  -1, // server-sent events go through as they come
		ModifyResponse: countResponse,
		ErrorHandler:   g.upstreamError,
	}
	return g
}

// Mint makes a lease for task over providers (by name: Anthropic,
// OpenAI), with a new random token; End kills it.
func (g *Gateway) Mint(task string, providers map[string]Provider) *Lease {
	l := &Lease{Task: task, token: tokenPrefix + rand.Text(), providers: providers}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.leases[l.token] = l
	return l
}

// Restore makes a lease for task again with the token an earlier process
// minted (a sidecar that restarted while the task ran: the token is in
// the task's environment), its usage counting on from used. A token not
// of Mint's form, or one live already, is refused.
func (g *Gateway) Restore(task, token string, providers map[string]Provider, used Usage) (*Lease, error) {
	if !ValidToken(token) {
		return nil, errors.New("not a token of the gateway's")
	}
	l := &Lease{Task: task, token: token, providers: providers, usage: used}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.leases[token] != nil {
		return nil, errors.New("the token is live already")
	}
	g.leases[token] = l
	return l, nil
}

// ValidToken says token has the form Mint gives: the prefix and 26
// characters of base32 (rand.Text).
func ValidToken(token string) bool {
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok || len(rest) != 26 {
		return false
	}
	for _, c := range rest {
		if !('A' <= c && c <= 'Z' || '2' <= c && c <= '7') {
			return false
		}
	}
	return true
}

// End kills the lease's token: its requests are refused from now on.
// Requests under way go on to their end. It returns the lease's usage.
func (g *Gateway) End(l *Lease) Usage {
	g.mu.Lock()
	delete(g.leases, l.token)
	g.mu.Unlock()
	return l.Usage()
}

// Lookup is the live lease of token, or nil: what else its caller serves
// beside the model APIs (the sandbox's tools) takes the same tokens.
func (g *Gateway) Lookup(token string) *Lease {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.leases[token]
}

// SandboxPorts are the sandbox's ports the gateway may take, the first
// that nothing there listens on (each process that carries it takes its
// own: serve, and a terminal's task run). The panel offers none of them
// for exposing (ports.ListeningPorts).
var SandboxPorts = []int{15100, 15101, 15102, 15103, 15104, 15105, 15106, 15107}

// Env is what a task's environment gets for the lease, the gateway being
// at base inside the sandbox ("http://127.0.0.1:15100"): each configured
// provider's base URL and the token in place of its key, so that the
// CLIs start (they refuse to without a key) and send it.
func Env(base string, l *Lease) []string {
	var env []string
	if _, ok := l.providers[Anthropic]; ok {
		// Claude Code's telemetry and update checks would go elsewhere
		// than the gateway: off.
		env = append(env, "ANTHROPIC_BASE_URL="+base+"/"+Anthropic, "ANTHROPIC_API_KEY="+l.token,
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	}
	if _, ok := l.providers[OpenAI]; ok {
		// The OpenAI clients' base URL holds the /v1 (Anthropic's does not).
		env = append(env, "OPENAI_BASE_URL="+base+"/"+OpenAI+"/v1", "OPENAI_API_KEY="+l.token)
	}
	return env
}
