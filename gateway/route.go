package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"regexp"
	"strings"
	"time"
)

// Bounds of a request.
const (
	// MaxBody bounds a request's body: the Messages API takes at most
	// 32 MB, a long conversation with images.
	MaxBody = 32 << 20
	// maxHeader bounds a request's headers.
	maxHeader = 64 << 10
	// headerWait bounds how long a connection may take to send its
	// request's headers.
	headerWait = 10 * time.Second
)

// route is one path of a provider the gateway forwards.
type route struct {
	method string
	path   *regexp.Regexp
}

func exact(method, path string) route {
	return route{method, regexp.MustCompile("^" + regexp.QuoteMeta(path) + "$")}
}

// modelID is a model's name in /v1/models/{id}.
var modelID = regexp.MustCompile(`^/v1/models/[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$`)

// routes are the paths of each provider's model API that go through;
// nothing else does (files, batches, admin and organisation APIs stay
// out: an agent that read a hostile page must not reach them with the
// user's key).
var routes = map[string][]route{
	Anthropic: {
		exact(http.MethodPost, "/v1/messages"),
		exact(http.MethodPost, "/v1/messages/count_tokens"),
		exact(http.MethodGet, "/v1/models"),
		{http.MethodGet, modelID},
	},
	OpenAI: {
		exact(http.MethodPost, "/v1/responses"),
		exact(http.MethodPost, "/v1/chat/completions"),
		exact(http.MethodGet, "/v1/models"),
		{http.MethodGet, modelID},
	},
}

func allowed(provider, method, path string) bool {
	for _, r := range routes[provider] {
		if r.method == method && r.path.MatchString(path) {
			return true
		}
	}
	return false
}

// refusal is a request the gateway does not forward, and why, for the
// body the client shows.
type refusal struct {
	status int
	reason string
}

func (r *refusal) Error() string { return r.reason }

func refuse(status int, format string, args ...any) *refusal {
	return &refusal{status, fmt.Sprintf(format, args...)}
}

// forward is an admitted request: its lease, where it goes and the key.
type forward struct {
	lease    *Lease
	provider string
	target   Provider
	path     string
	key      string
}

type forwardKey struct{}

// Serve serves the gateway on l until it is closed.
func (g *Gateway) Serve(l net.Listener) error { return Serve(l, g) }

// Serve serves h on l, with the gateway's bounds on a request's headers,
// until l is closed.
func Serve(l net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: headerWait, MaxHeaderBytes: maxHeader}
	err := srv.Serve(l)
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// ServeHTTP forwards an admitted request, and refuses anything else with
// a 4xx whose JSON body says why (in the shape both providers' errors
// have, so that the CLIs show it).
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f, err := g.admit(r)
	if err != nil {
		g.refused(w, r, f, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	g.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), forwardKey{}, f)))
}

// admit checks a request: its form, its token, its provider and path,
// and that the user has a key for it.
func (g *Gateway) admit(r *http.Request) (*forward, error) {
	switch {
	case r.Method == http.MethodConnect:
		return nil, refuse(http.StatusMethodNotAllowed, "the model gateway does not tunnel (CONNECT): it forwards the model APIs' paths only")
	case !strings.HasPrefix(r.RequestURI, "/") || r.URL.Host != "":
		return nil, refuse(http.StatusBadRequest, "the model gateway takes no absolute URL: it forwards to the configured model API only")
	case r.URL.RawPath != "" || strings.Contains(r.URL.Path, "//") || strings.Contains(r.URL.Path, "/."):
		return nil, refuse(http.StatusBadRequest, "the model gateway takes plain paths only (no escapes, no empty or dot segments)")
	}
	token := TokenOf(r.Header)
	if token == "" {
		return nil, refuse(http.StatusUnauthorized, "no token: send the task's ANTHROPIC_API_KEY or OPENAI_API_KEY as x-api-key or Authorization: Bearer")
	}
	lease := g.Lookup(token)
	if lease == nil {
		return nil, refuse(http.StatusUnauthorized, "the token is not a running task's (tokens die when their task ends)")
	}
	f := &forward{lease: lease}
	var rest string
	var found bool
	f.provider, rest, found = strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	f.path = "/" + rest
	if _, known := routes[f.provider]; !found || !known {
		return f, refuse(http.StatusNotFound, "the model gateway serves /anthropic/... and /openai/... only")
	}
	if f.target, found = lease.providers[f.provider]; !found {
		return f, refuse(http.StatusNotFound, "%s is not configured: add it to config.json models", f.provider)
	}
	if !allowed(f.provider, r.Method, f.path) {
		return f, refuse(http.StatusForbidden, "%s %s is not one of the %s model API paths the gateway forwards", r.Method, f.path, f.provider)
	}
	if r.ContentLength > MaxBody {
		return f, refuse(http.StatusRequestEntityTooLarge, "the request's body is larger than %d bytes", MaxBody)
	}
	if f.key = f.target.Key(); f.key == "" {
		return f, refuse(http.StatusServiceUnavailable, "the sidecar has no key for %s: set %s in its environment", f.provider, f.target.KeyEnv)
	}
	return f, nil
}

// TokenOf is the token a request carries: x-api-key (Anthropic's
// clients) or Authorization: Bearer (OpenAI's, and Claude Code's
// ANTHROPIC_AUTH_TOKEN).
func TokenOf(h http.Header) string {
	if t := h.Get("X-Api-Key"); t != "" {
		return t
	}
	if t, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(t)
	}
	return ""
}

// credential says whether a header may carry a credential: every such
// header the sandbox sent is stripped before the user's key is added.
func credential(name string) bool {
	n := strings.ToLower(name)
	for _, word := range []string{"auth", "key", "token", "cookie", "secret", "credential"} {
		if strings.Contains(n, word) {
			return true
		}
	}
	return false
}

// rewrite points an admitted request at its provider and swaps its
// credentials for the user's key. Hop-by-hop headers are already gone
// (httputil's Rewrite), and no X-Forwarded header is added.
func rewrite(pr *httputil.ProxyRequest) {
	f := pr.In.Context().Value(forwardKey{}).(*forward)
	u := *f.target.BaseURL
	u.Path = strings.TrimSuffix(u.Path, "/") + f.path
	u.RawPath = ""
	u.RawQuery = pr.In.URL.RawQuery
	pr.Out.URL = &u
	pr.Out.Host = ""
	for name := range pr.Out.Header {
		if credential(name) {
			pr.Out.Header.Del(name)
		}
	}
	// The gateway reads the usage in responses: without the client's
	// Accept-Encoding the transport asks for gzip itself and unpacks it.
	pr.Out.Header.Del("Accept-Encoding")
	if f.provider == Anthropic {
		pr.Out.Header.Set("X-Api-Key", f.key)
	} else {
		pr.Out.Header.Set("Authorization", "Bearer "+f.key)
	}
}

// errorBody is a refusal as both providers write their errors.
type errorBody struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, message string) {
	var b errorBody
	b.Type, b.Error.Type, b.Error.Message = "error", "pilot_gateway_error", "pilot-sandbox model gateway: "+message
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(b)
}

// refused answers a request admit refused, and logs it (never a header).
func (g *Gateway) refused(w http.ResponseWriter, r *http.Request, f *forward, err error) {
	var ref *refusal
	if !errors.As(err, &ref) {
		ref = refuse(http.StatusBadRequest, "%s", err.Error())
	}
	ev := g.log.Info().Int("status", ref.status).Str("method", r.Method).Str("path", clip(r.URL.Path)).Str("reason", ref.reason)
	if f != nil {
		ev = ev.Str("task", f.lease.Task)
	}
	ev.Msg("model gateway: refused a request")
	writeError(w, ref.status, ref.reason)
}

// upstreamError answers a request the provider did not answer.
func (g *Gateway) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	f := r.Context().Value(forwardKey{}).(*forward)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request's body is larger than %d bytes", MaxBody))
		return
	case r.Context().Err() != nil:
		return // the client went away
	}
	g.log.Warn().Err(err).Str("task", f.lease.Task).Str("provider", f.provider).Msg("model gateway: the model API did not answer")
	writeError(w, http.StatusBadGateway, fmt.Sprintf("the %s API at %s did not answer: %v", f.provider, f.target.BaseURL.Host, err))
}

// clip bounds a path in a log line.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
