package gateway_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/gateway"
)

const userKey = "sk-ant-the-users-own-key-0123456789"

// upstream is a scripted model API: it records every request's headers
// and answers with handler.
type upstream struct {
	*httptest.Server
	mu      sync.Mutex
	headers []http.Header
	paths   []string
}

func newUpstream(t testing.TB, handler http.HandlerFunc) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.headers = append(u.headers, r.Header.Clone())
		u.paths = append(u.paths, r.URL.RequestURI())
		u.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) requests() ([]http.Header, []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.headers, u.paths
}

// fixture is a gateway served on a loopback port, with one lease over
// both providers at up.
type fixture struct {
	gw    *gateway.Gateway
	base  string
	lease *gateway.Lease
	log   *bytes.Buffer
}

func newFixture(t testing.TB, up *upstream, key string) *fixture {
	var log bytes.Buffer
	gw := gateway.New(nil, zerolog.New(&log))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gw.Serve(l)
	t.Cleanup(func() { l.Close() })
	base, _ := url.Parse(up.URL)
	p := gateway.Provider{BaseURL: base, Key: func() string { return key }, KeyEnv: "ANTHROPIC_API_KEY"}
	lease := gw.Mint("task-1", map[string]gateway.Provider{gateway.Anthropic: p, gateway.OpenAI: p})
	return &fixture{gw: gw, base: "http://" + l.Addr().String(), lease: lease, log: &log}
}

func (f *fixture) do(t *testing.T, method, path string, header map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, f.base+path, strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

// TestStreamGoesThroughAsItComes: a streamed message arrives event by
// event (the first before the server sends the rest), the server gets the
// user's key and neither the placeholder nor any credential the client
// sent, and the usage of message_start and message_delta is counted.
func TestStreamGoesThroughAsItComes(t *testing.T) {
	release := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":25,\"output_tokens\":1,\"cache_read_input_tokens\":7}}}\n\n")
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprint(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	})
	f := newFixture(t, up, userKey)
	req, _ := http.NewRequest("POST", f.base+"/anthropic/v1/messages?beta=true", strings.NewReader(`{"stream":true}`))
	req.Header.Set("X-Api-Key", f.lease.Token())
	req.Header.Set("Cookie", "session=stolen")
	req.Header.Set("X-Goog-Api-Key", "another")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	first, err := r.ReadString('\n')
	if err != nil || first != "event: message_start\n" {
		t.Fatalf("the first event did not arrive before the rest was sent: %q %v", first, err)
	}
	close(release)
	rest, _ := io.ReadAll(r)
	if !strings.Contains(string(rest), "message_stop") {
		t.Errorf("the rest: %q", rest)
	}
	resp.Body.Close()
	headers, paths := up.requests()
	h := headers[0]
	if h.Get("X-Api-Key") != userKey || h.Get("Authorization") != "" || h.Get("Cookie") != "" || h.Get("X-Goog-Api-Key") != "" || h.Get("Anthropic-Version") != "2023-06-01" {
		t.Errorf("the server got headers %v", h)
	}
	if paths[0] != "/v1/messages?beta=true" {
		t.Errorf("the server got path %q", paths[0])
	}
	for name, vs := range h {
		if strings.Contains(strings.Join(vs, " "), f.lease.Token()) {
			t.Errorf("the placeholder reached the server in %s", name)
		}
	}
	want := gateway.Usage{Requests: 1, InputTokens: 25, OutputTokens: 15, CachedInputTokens: 7}
	if got := waitUsage(f.lease, 1); got != want {
		t.Errorf("usage %+v, want %+v", got, want)
	}
}

// waitUsage waits for the lease's count of requests to reach n: a
// response is counted as the proxy closes it, after the client read it.
func waitUsage(l *gateway.Lease, n int64) gateway.Usage {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if u := l.Usage(); u.Requests >= n {
			return u
		}
	}
	return l.Usage()
}

// TestOpenAIJSONUsage: OpenAI's Bearer token is swapped for the key, and
// a JSON response's usage (chat completions' names) is counted.
func TestOpenAIJSONUsage(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","usage":{"prompt_tokens":11,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":2}}}`)
	})
	f := newFixture(t, up, userKey)
	resp, body := f.do(t, "POST", "/openai/v1/chat/completions", map[string]string{"Authorization": "Bearer " + f.lease.Token()}, `{}`)
	if resp.StatusCode != 200 || !strings.Contains(body, "prompt_tokens") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	headers, _ := up.requests()
	if headers[0].Get("Authorization") != "Bearer "+userKey || headers[0].Get("X-Api-Key") != "" {
		t.Errorf("the server got %v", headers[0])
	}
	if got := waitUsage(f.lease, 1); got != (gateway.Usage{Requests: 1, InputTokens: 11, OutputTokens: 3, CachedInputTokens: 2}) {
		t.Errorf("usage %+v", got)
	}
}

// TestRefusals: what is not a live task's request to a model API path is
// refused with a 4xx whose body says why, and reaches no server.
func TestRefusals(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	f := newFixture(t, up, userKey)
	dead := f.gw.Mint("task-0", map[string]gateway.Provider{})
	f.gw.End(dead)
	only := f.gw.Mint("task-2", map[string]gateway.Provider{gateway.Anthropic: {BaseURL: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}, Key: func() string { return userKey }}})
	key := func(tok string) map[string]string { return map[string]string{"X-Api-Key": tok} }
	live := key(f.lease.Token())
	cases := []struct {
		name, method, path string
		header             map[string]string
		status             int
		says               string
	}{
		{"no token", "POST", "/anthropic/v1/messages", nil, 401, "no token"},
		{"a dead token", "POST", "/anthropic/v1/messages", key(dead.Token()), 401, "not a running task's"},
		{"a made-up token", "POST", "/anthropic/v1/messages", key("pilot-gw-XXXX"), 401, "not a running task's"},
		{"another path", "GET", "/anthropic/v1/files", live, 403, "is not one of the anthropic model API paths"},
		{"another method", "DELETE", "/anthropic/v1/messages", live, 403, "is not one of"},
		{"batches", "POST", "/anthropic/v1/messages/batches", live, 403, "is not one of"},
		{"the root", "GET", "/", live, 404, "serves /anthropic/... and /openai/... only"},
		{"another prefix", "GET", "/evil.example/v1/models", live, 404, "serves /anthropic/"},
		{"an unconfigured provider", "POST", "/openai/v1/responses", key(only.Token()), 404, "openai is not configured"},
		{"dot segments", "POST", "/anthropic/v1/messages/./../../v1/files", live, 400, "plain paths only"},
		{"escapes", "POST", "/anthropic/v1/%6dessages", live, 400, "plain paths only"},
		{"double slashes", "POST", "/anthropic//v1/messages", live, 400, "plain paths only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := f.do(t, c.method, c.path, c.header, "{}")
			if resp.StatusCode != c.status || !strings.Contains(body, c.says) || !strings.Contains(body, `"type":"error"`) {
				t.Errorf("%d %s", resp.StatusCode, body)
			}
		})
	}
	if _, paths := up.requests(); len(paths) != 0 {
		t.Errorf("the server got %v", paths)
	}
}

// TestRawRequestTricks: an absolute URL, CONNECT and a Host of another
// server, written on the wire as a hostile client would.
func TestRawRequestTricks(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "{}") })
	f := newFixture(t, up, userKey)
	tok := f.lease.Token()
	cases := []struct{ name, request, status, says string }{
		{"absolute URL", "POST http://evil.example/v1/messages HTTP/1.1\r\nHost: evil.example\r\nX-Api-Key: " + tok + "\r\nContent-Length: 0\r\n\r\n", "400", "no absolute URL"},
		{"absolute URL to the provider", "POST " + up.URL + "/v1/messages HTTP/1.1\r\nHost: x\r\nX-Api-Key: " + tok + "\r\nContent-Length: 0\r\n\r\n", "400", "no absolute URL"},
		{"CONNECT", "CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\nX-Api-Key: " + tok + "\r\n\r\n", "405", "does not tunnel"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := raw(t, f.base, c.request)
			if status != c.status || !strings.Contains(body, c.says) {
				t.Errorf("%s %s", status, body)
			}
		})
	}
	// A Host naming another server changes nothing: the request goes to
	// the provider's base URL.
	status, _ := raw(t, f.base, "POST /anthropic/v1/messages HTTP/1.1\r\nHost: evil.example\r\nX-Api-Key: "+tok+"\r\nContent-Length: 2\r\n\r\n{}")
	if _, paths := up.requests(); status != "200" || len(paths) != 1 || paths[0] != "/v1/messages" {
		t.Errorf("a Host of another server: %s, the provider got %v", status, paths)
	}
}

// raw writes one request on a connection and reads the response's status
// and body.
func raw(t *testing.T, base, request string) (string, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(conn, request)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	return fmt.Sprint(resp.StatusCode), string(body)
}

// TestTheKeyStaysOut: no key in the sidecar (503 naming the variable, not
// a key); a provider that does not answer (502); a body over the bound
// (413): the key is in no answer and no log line.
func TestTheKeyStaysOut(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) })
	f := newFixture(t, up, userKey)
	tok := map[string]string{"X-Api-Key": f.lease.Token()}
	gone := f.gw.Mint("task-3", map[string]gateway.Provider{gateway.Anthropic: {BaseURL: &url.URL{Scheme: "http", Host: "127.0.0.1:1"}, Key: func() string { return userKey }}})
	if resp, body := f.do(t, "POST", "/anthropic/v1/messages", map[string]string{"X-Api-Key": gone.Token()}, "{}"); resp.StatusCode != 502 || strings.Contains(body, userKey) {
		t.Errorf("a provider that does not answer: %d %s", resp.StatusCode, body)
	}
	if resp, body := f.do(t, "POST", "/anthropic/v1/messages", tok, strings.Repeat("x", gateway.MaxBody+1)); resp.StatusCode != 413 {
		t.Errorf("a body over the bound: %d %s", resp.StatusCode, body)
	}
	nokey := newFixture(t, up, "")
	resp, body := nokey.do(t, "POST", "/anthropic/v1/messages", map[string]string{"X-Api-Key": nokey.lease.Token()}, "{}")
	if resp.StatusCode != 503 || !strings.Contains(body, "set ANTHROPIC_API_KEY in its environment") {
		t.Errorf("no key: %d %s", resp.StatusCode, body)
	}
	if strings.Contains(f.log.String(), userKey) || f.log.Len() == 0 {
		t.Errorf("the log: %s", f.log)
	}
}

// TestEnv: the task's environment names the gateway and the token, never
// a key, for the providers the lease has.
func TestEnv(t *testing.T) {
	gw := gateway.New(nil, zerolog.Nop())
	p := gateway.Provider{BaseURL: &url.URL{Scheme: "https", Host: "api.anthropic.com"}, Key: func() string { return userKey }}
	l := gw.Mint("t", map[string]gateway.Provider{gateway.Anthropic: p})
	env := strings.Join(gateway.Env("http://127.0.0.1:15100", l), "\n")
	want := "ANTHROPIC_BASE_URL=http://127.0.0.1:15100/anthropic\nANTHROPIC_API_KEY=" + l.Token() + "\nCLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"
	if env != want || !strings.HasPrefix(l.Token(), "pilot-gw-") || len(l.Token()) < 30 {
		t.Errorf("env %q", env)
	}
}

// TestRestore: a token Mint gave is taken again (a restarted sidecar),
// its usage counting on; a made-up form, or a token live already, is
// refused; an ended restored lease is dead as any other.
func TestRestore(t *testing.T) {
	gw := gateway.New(nil, zerolog.Nop())
	p := map[string]gateway.Provider{gateway.Anthropic: {BaseURL: &url.URL{Scheme: "https", Host: "api.anthropic.com"}, Key: func() string { return userKey }}}
	token := gateway.New(nil, zerolog.Nop()).Mint("t", p).Token()
	l, err := gw.Restore("t", token, p, gateway.Usage{Requests: 3, InputTokens: 9})
	if err != nil || l.Token() != token || gw.Lookup(token) != l || l.Usage().Requests != 3 {
		t.Fatalf("restore: %v, %+v", err, l)
	}
	if _, err := gw.Restore("t", token, p, gateway.Usage{}); err == nil {
		t.Error("a live token restored twice")
	}
	for _, bad := range []string{"", "pilot-gw-", "sk-ant-x", "pilot-gw-" + strings.Repeat("a", 26), "pilot-gw-" + strings.Repeat("A", 27), token + "\n"} {
		if _, err := gw.Restore("t", bad, p, gateway.Usage{}); err == nil {
			t.Errorf("restored %q", bad)
		}
	}
	gw.End(l)
	if gw.Lookup(token) != nil {
		t.Error("an ended restored lease is live")
	}
}
