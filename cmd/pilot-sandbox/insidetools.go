package main

import (
	"net/http"
	"sync"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/gateway"
	"github.com/pilot-sandbox/pilot-sandbox/mcpserver"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// insideTools serves the sandbox's own 16 tools over MCP (streamable
// HTTP, at /mcp beside the model APIs on the gateway's listener) to the
// agent of a task running in it: a request must carry a running task's
// token, and reaches the tools of that task's sandbox only. The tools
// are on whatever the project's switch (dockerToolsEnabled) says: that
// switch is the user's word on agents outside driving the sandbox; the
// agent inside acts on its own desktop, where it runs commands anyway.
type insideTools struct {
	m    *service.Manager
	gw   *gateway.Gateway
	log  zerolog.Logger
	set  *tools.Set
	rec  tools.Recorder // where the calls are recorded, as the task's
	gate tools.Gate     // who holds the desktop

	mu       sync.Mutex              // guards the rest
	projects map[string]string       // a task's project, by task
	servers  map[string]http.Handler // a project's tools, by project
}

func newInsideTools(m *service.Manager, gw *gateway.Gateway, log zerolog.Logger) *insideTools {
	return &insideTools{m: m, gw: gw, log: log, projects: map[string]string{}, servers: map[string]http.Handler{}}
}

// task records a task's project, for its requests; forget drops it.
func (x *insideTools) task(id, project string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.projects[id] = project
}

func (x *insideTools) forget(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.projects, id)
}

// alwaysOn is the inside agent's switch.
type alwaysOn struct{}

func (alwaysOn) ToolsEnabled(string) (bool, error) { return true, nil }

func (x *insideTools) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	lease := x.gw.Lookup(gateway.TokenOf(r.Header))
	if lease == nil {
		http.Error(w, "pilot-sandbox: the sandbox's tools need a running task's token (Authorization: Bearer)", http.StatusUnauthorized)
		return
	}
	x.mu.Lock()
	project, ok := x.projects[lease.Task]
	h := x.servers[project]
	if ok && h == nil {
		if x.set == nil {
			x.set = tools.New(x.m, tools.Record(x.rec), tools.Control(x.gate))
		}
		h = mcpserver.New(x.set, alwaysOn{}, mcpserver.Options{Project: project, Version: version, Log: x.log}).HTTPHandler()
		x.servers[project] = h
	}
	x.mu.Unlock()
	if !ok {
		http.Error(w, "pilot-sandbox: no task of this process has that token", http.StatusUnauthorized)
		return
	}
	h.ServeHTTP(w, r)
}

// close ends the tools' calls under way.
func (x *insideTools) close() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.set != nil {
		x.set.Close()
	}
}
