package dockertest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// API is the engine's HTTP API as a test reads it: raw JSON, not through the
// engine package, so that a test can check what Docker itself reports
// (`docker inspect`, `docker stats`) rather than what the adapter maps.
type API struct {
	t      testing.TB
	client *http.Client
}

// NewAPI returns the API of the engine the sidecar would use; the test is
// skipped or failed as Engine decides when there is none.
func NewAPI(t testing.TB) *API {
	t.Helper()
	network, address, err := dialAddress(Engine(t).Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, address)
	}
	return &API{t: t, client: &http.Client{Transport: &http.Transport{DialContext: dial}, Timeout: time.Minute}}
}

// Get returns the body of a GET of path (e.g. /containers/ID/json), failing
// the test on anything but 200.
func (a *API) Get(path string) []byte {
	a.t.Helper()
	resp, err := a.client.Get("http://docker" + path)
	if err != nil {
		a.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		a.t.Fatalf("GET %s: %s %s %v", path, resp.Status, body, err)
	}
	return body
}

// Post sends a POST of path with no body (e.g. /containers/ID/kill),
// failing the test on anything but a 2xx answer: what `docker kill`,
// `docker restart` or `docker pause` do behind the sidecar's back.
func (a *API) Post(path string) {
	a.t.Helper()
	resp, err := a.client.Post("http://docker"+path, "application/json", nil)
	if err != nil {
		a.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(resp.Body)
		a.t.Fatalf("POST %s: %s %s", path, resp.Status, body)
	}
}

// BodySize is the length of the body of a GET of path (e.g. a container's
// whole log), read without keeping it, failing the test on anything but 200.
func (a *API) BodySize(path string) int64 {
	a.t.Helper()
	resp, err := a.client.Get("http://docker" + path)
	if err != nil {
		a.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		a.t.Fatalf("GET %s: %s %s", path, resp.Status, body)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		a.t.Fatalf("GET %s: %v", path, err)
	}
	return n
}

// PostJSON sends a POST of path with body as JSON (e.g. /networks/ID/connect)
// and decodes the answer into out unless it is nil, failing the test on
// anything but a 2xx answer.
func (a *API) PostJSON(path string, body, out any) {
	a.t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		a.t.Fatal(err)
	}
	resp, err := a.client.Post("http://docker"+path, "application/json", bytes.NewReader(data))
	if err != nil {
		a.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode/100 != 2 {
		a.t.Fatalf("POST %s: %s %s %v", path, resp.Status, answer, err)
	}
	if out != nil {
		if err := json.Unmarshal(answer, out); err != nil {
			a.t.Fatalf("POST %s: %v", path, err)
		}
	}
}

// Delete sends a DELETE of path (e.g. /containers/ID?force=true).
func (a *API) Delete(path string) {
	a.t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, "http://docker"+path, nil)
	resp, err := a.client.Do(req)
	if err != nil {
		a.t.Fatalf("DELETE %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(resp.Body)
		a.t.Fatalf("DELETE %s: %s %s", path, resp.Status, body)
	}
}

// GetJSON decodes the body of a GET of path into v.
func (a *API) GetJSON(path string, v any) {
	a.t.Helper()
	if err := json.Unmarshal(a.Get(path), v); err != nil {
		a.t.Fatalf("GET %s: %v", path, err)
	}
}

// Stats is what `docker stats` shows of a container.
type Stats struct {
	// MemoryBytes is the cgroup's memory use less its inactive page cache,
	// as docker stats computes it.
	MemoryBytes int64
	// Pids counts the container's processes and threads.
	Pids int64
}

// Stats reads a container's stats once.
func (a *API) Stats(id string) Stats {
	a.t.Helper()
	var raw struct {
		PidsStats struct {
			Current int64 `json:"current"`
		} `json:"pids_stats"`
		MemoryStats struct {
			Usage int64            `json:"usage"`
			Stats map[string]int64 `json:"stats"`
		} `json:"memory_stats"`
	}
	// one-shot: one sample now, not two a second apart (API 1.41).
	a.GetJSON("/containers/"+id+"/stats?stream=false&one-shot=true", &raw)
	m := raw.MemoryStats
	cache := m.Stats["total_inactive_file"] // cgroup v1
	if v, ok := m.Stats["inactive_file"]; ok {
		cache = v // cgroup v2
	}
	return Stats{MemoryBytes: m.Usage - cache, Pids: raw.PidsStats.Current}
}
