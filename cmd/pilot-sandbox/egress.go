package main

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/egress"
	"github.com/pilot-sandbox/pilot-sandbox/engine"
	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/netpolicy"
	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// enforcement joins egress (the enforcement), netpolicy (the judge) and the
// connection log: the two packages declare one contract apart
// (docs/network.md), and only the command knows both. The judge and the
// log are built after the manager (they read the policy through it), so
// they are set once built; until then a connection is refused.
type enforcement struct {
	*egress.Enforcer
	judge atomic.Pointer[netpolicy.Judge]
	log   atomic.Pointer[netLog]
}

func newEnforcement(docker *engine.Client, log zerolog.Logger) *enforcement {
	n := &enforcement{}
	n.Enforcer = egress.New(docker, egress.Config{
		Image:   cmp.Or(os.Getenv(envImage), images.DefaultTag),
		Scope:   cmp.Or(os.Getenv(envScope), service.DefaultScope),
		Judge:   policyJudge{n},
		OnEntry: n.record,
		Logger:  log,
	})
	return n
}

// ExecEnv is service.Network's: the proxy and the exec's cause.
func (n *enforcement) ExecEnv(c service.ExecCause) []string {
	return n.Enforcer.ExecEnv(egress.Cause{Tool: c.Tool, RequestID: c.RequestID, Exec: c.Exec, Task: c.Task})
}

// Blocked is service.Network's: what was refused since the last look.
func (n *enforcement) Blocked(project string) string {
	return egress.BlockedLine(n.TakeBlocked(project))
}

// record writes a connection to the log once it is over (denied, or
// ended with its byte counts).
func (n *enforcement) record(e egress.Entry) {
	l := n.log.Load()
	if l == nil || !e.Ended {
		return
	}
	decision := "deny"
	if e.Allowed {
		decision = "allow"
	}
	entry := projectfs.NetLogEntry{Time: e.Time.UnixMilli(), Host: e.Host, Port: e.Port, Protocol: e.Protocol,
		Decision: decision, By: e.By, Rule: e.Rule, Reason: e.Reason, BytesIn: e.BytesIn, BytesOut: e.BytesOut}
	if e.Cause != nil {
		entry.Cause, _ = json.Marshal(e.Cause)
	}
	if e.Process != nil {
		entry.Process, _ = json.Marshal(e.Process)
	}
	l.Record(e.Project, entry)
}

// policyJudge is netpolicy's Judge as egress asks it.
type policyJudge struct{ n *enforcement }

func (p policyJudge) Judge(ctx context.Context, r egress.Request) egress.Decision {
	j := p.n.judge.Load()
	if j == nil {
		return egress.Decision{By: netpolicy.ByFixed, Reason: "pilot-sandbox is still starting: try again"}
	}
	req := netpolicy.Request{Project: r.Project, Names: r.Names, Addr: r.Addr, Port: r.Port, Protocol: r.Protocol}
	req.Process, req.Cause = hintsOf(r.Process, r.Cause)
	if r.Learn != nil {
		req.Learn = func(ctx context.Context) (*netpolicy.Process, *netpolicy.Cause) {
			return hintsOf(r.Learn(ctx))
		}
	}
	d := j.Judge(ctx, req)
	return egress.Decision{Allow: d.Allow, Dial: d.Dial, By: d.By, Rule: d.Rule, Reason: d.Reason}
}

// hintsOf is egress's hints as netpolicy's.
func hintsOf(process *egress.Process, cause *egress.Cause) (*netpolicy.Process, *netpolicy.Cause) {
	var p *netpolicy.Process
	var c *netpolicy.Cause
	if process != nil {
		p = &netpolicy.Process{PID: process.PID, Command: process.Command}
	}
	if cause != nil {
		nc := netpolicy.Cause(*cause)
		c = &nc
	}
	return p, c
}
