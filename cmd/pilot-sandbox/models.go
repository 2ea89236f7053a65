package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/engine"
	"github.com/pilot-sandbox/pilot-sandbox/gateway"
	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tasks"
)

// defaultBaseURLs are the providers' own APIs.
var defaultBaseURLs = map[string]string{
	gateway.Anthropic: "https://api.anthropic.com",
	gateway.OpenAI:    "https://api.openai.com",
}

// modelGateway is the process's model gateway (docs/models.md), the
// tasks' Models: served on a port of the host's loopback from the first
// task that has a provider, and carried into each such task's sandbox by
// the process's relays as it starts.
type modelGateway struct {
	m      *service.Manager
	docker *engine.Client
	gw     *gateway.Gateway
	inside *insideTools
	log    zerolog.Logger

	mu       sync.Mutex // guards the rest
	carrier  *ports.Carrier
	own      bool // the carrier is the gateway's own (a command without relays), closed with it
	listener net.Listener
	closed   bool
}

func newModelGateway(m *service.Manager, docker *engine.Client, log zerolog.Logger) *modelGateway {
	gw := gateway.New(nil, log)
	return &modelGateway{m: m, docker: docker, gw: gw, inside: newInsideTools(m, gw, log), log: log}
}

// useCarrier makes c carry the gateway into the sandboxes: the relays of
// serve, mcp and ui. Until then, a task's start makes a carrier of the
// gateway's own, for that task's project.
func (g *modelGateway) useCarrier(c *ports.Carrier) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.carrier == nil {
		g.carrier = c
	}
}

// Open gives a task its access: its tokens and the gateway's address in
// its sandbox; nothing when the user configured no provider.
func (g *modelGateway) Open(ctx context.Context, project, task string) (tasks.ModelAccess, error) {
	providers, err := g.providers()
	if err != nil || len(providers) == 0 {
		return tasks.ModelAccess{}, err
	}
	port, err := g.carry(ctx, project, gateway.SandboxPorts)
	if err != nil {
		return tasks.ModelAccess{}, err
	}
	lease := g.gw.Mint(task, providers)
	g.log.Info().Str("task", task).Strs("providers", slices.Sorted(maps.Keys(providers))).Int("port", port).Msg("model gateway: opened to a task")
	return g.access(project, task, port, lease), nil
}

// kept is what a task's access keeps for Reopen (tasks.ModelAccess's
// Resume): the port the gateway has inside the sandbox, which the task's
// environment names, and the task's token.
type kept struct {
	Port  int    `json:"port"`
	Token string `json:"token"`
}

// Reopen takes a running task's access again after a restart: the
// gateway carried into its sandbox on the same port and its token live
// again, so the agent's next model call is answered as before. The port
// must be free there (the relay of the process that died is gone with
// it).
func (g *modelGateway) Reopen(ctx context.Context, project, task string, k tasks.KeptAccess) (tasks.ModelAccess, error) {
	var was kept
	if err := json.Unmarshal(k.Resume, &was); err != nil || !slices.Contains(gateway.SandboxPorts, was.Port) {
		return tasks.ModelAccess{}, fmt.Errorf("the task's kept access is not one this sidecar keeps: %s", k.Resume)
	}
	providers, err := g.providers()
	if err != nil || len(providers) == 0 {
		return tasks.ModelAccess{}, cmp.Or(err, errors.New("no model provider is configured any more"))
	}
	used := gateway.Usage{Requests: k.Used.Requests, InputTokens: k.Used.InputTokens, OutputTokens: k.Used.OutputTokens, CachedInputTokens: k.Used.CachedInputTokens}
	lease, err := g.gw.Restore(task, was.Token, providers, used)
	if err != nil {
		return tasks.ModelAccess{}, err
	}
	if _, err := g.carry(ctx, project, []int{was.Port}); err != nil {
		g.gw.End(lease)
		return tasks.ModelAccess{}, err
	}
	g.log.Info().Str("task", task).Int("port", was.Port).Msg("model gateway: opened again to a task followed after a restart")
	return g.access(project, task, was.Port, lease), nil
}

// carry starts the gateway if it is not yet, and carries it into the
// project's sandbox on the first of ports free there.
func (g *modelGateway) carry(ctx context.Context, project string, ports []int) (int, error) {
	carrier, hostPort, err := g.serving(project)
	if err != nil {
		return 0, err
	}
	port, err := carrier.CarryInto(ctx, project, hostPort, ports)
	if err != nil {
		return 0, fmt.Errorf("carry the model gateway into the sandbox: %w", err)
	}
	return port, nil
}

// access is the task's access through lease, the gateway on port inside
// the sandbox.
func (g *modelGateway) access(project, task string, port int, lease *gateway.Lease) tasks.ModelAccess {
	g.inside.task(task, project)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	resume, _ := json.Marshal(kept{Port: port, Token: lease.Token()})
	usage := func(u gateway.Usage) tasks.Usage {
		return tasks.Usage{Requests: u.Requests, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedInputTokens: u.CachedInputTokens}
	}
	return tasks.ModelAccess{
		Env: append(gateway.Env(base, lease), "PILOT_MCP_URL="+base+"/mcp", "PILOT_MCP_TOKEN="+lease.Token()),
		End: func() tasks.Usage {
			u := g.gw.End(lease)
			g.inside.forget(task)
			return usage(u)
		},
		Used:   func() tasks.Usage { return usage(lease.Usage()) },
		Resume: resume,
	}
}

// providers are the user's config.json models as the gateway takes them;
// a problem with models fails the task's start (an agent without its
// model would fail later, less clearly).
func (g *modelGateway) providers() (map[string]gateway.Provider, error) {
	cfg, file, err := g.m.Policy()
	var ue *projectfs.UserConfigError
	if errors.As(err, &ue) {
		for _, p := range ue.Problems {
			if projectfs.ModelsKey(p.Key) {
				return nil, &projectfs.ConfigError{File: file, Field: p.Key, Reason: p.Reason}
			}
		}
	}
	out := map[string]gateway.Provider{}
	for name, mp := range cfg.Models {
		base, err := url.Parse(cmp.Or(mp.BaseURL, defaultBaseURLs[name]))
		if err != nil {
			return nil, &projectfs.ConfigError{File: file, Field: "models." + name + ".baseUrl", Reason: err.Error()}
		}
		env := mp.APIKeyEnv
		out[name] = gateway.Provider{BaseURL: base, KeyEnv: env, Key: func() string { return os.Getenv(env) }}
	}
	return out, nil
}

// serving starts the gateway's listener if it has none, and returns the
// carrier and the listener's port.
func (g *modelGateway) serving(project string) (*ports.Carrier, int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, 0, errors.New("the sidecar is closing")
	}
	if g.listener == nil {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, 0, fmt.Errorf("listen for the model gateway: %w", err)
		}
		g.listener = l
		go gateway.Serve(l, http.HandlerFunc(g.route)) // ends as close closes l
	}
	if g.carrier == nil {
		g.carrier = ports.NewCarrier(g.m, g.docker, ports.Options{Project: project, Log: g.log})
		g.own = true
	}
	return g.carrier, g.listener.Addr().(*net.TCPAddr).Port, nil
}

// close stops the gateway: the tasks' tokens die with the process.
func (g *modelGateway) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	if g.listener != nil {
		g.listener.Close()
	}
	if g.own {
		g.carrier.Close()
	}
	g.inside.close()
}

// route sends /mcp to the sandbox's tools and everything else to the
// gateway, which refuses what is not a model API's (an http.ServeMux
// would answer CONNECT and odd paths itself, before the gateway's
// refusals).
func (g *modelGateway) route(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect && r.RequestURI == "/mcp" {
		g.inside.ServeHTTP(w, r)
		return
	}
	g.gw.ServeHTTP(w, r)
}
