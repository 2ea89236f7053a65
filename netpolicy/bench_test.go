package netpolicy

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkJudgeCachedAllow is what a connection to an allowed name pays
// in the Judge once its name's addresses are cached: the policy assembled
// from its layers (the user's config with 50 rules of each kind, the dev
// preset, 20 kept decisions), every list matched, the addresses checked.
func BenchmarkJudgeCachedAllow(b *testing.B) {
	for _, tc := range []struct {
		name string
		req  Request
	}{
		{"preset", conn(443, "registry.npmjs.org")},
		{"rule", conn(443, "example.org")},
		{"ip", ip("93.184.215.14", 443)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			layers := benchLayers()
			j := NewJudge(layers, &fakeResolver{answers: world}, &fakeAsker{})
			ctx := context.Background()
			if d := j.Judge(ctx, tc.req); !d.Allow {
				b.Fatalf("not allowed: %+v", d)
			}
			b.ReportAllocs()
			for b.Loop() {
				j.Judge(ctx, tc.req)
			}
		})
	}
}

func benchLayers() *fakeLayers {
	l := &fakeLayers{host: hostAddrs}
	for i := range 50 {
		l.user.Deny = append(l.user.Deny, mustRule(fmt.Sprintf("deny%d.example.net", i)))
		l.user.Ask = append(l.user.Ask, mustRule(fmt.Sprintf("*.ask%d.example.net:443", i)))
		l.user.Allow = append(l.user.Allow, mustRule(fmt.Sprintf("allow%d.example.net", i)))
	}
	l.user.Allow = append(l.user.Allow, mustRule("example.org:443"), mustRule("93.184.215.0/24"))
	for i := range 20 {
		l.kept = append(l.kept, Kept{Rule: mustRule(fmt.Sprintf("kept%d.example.net:443", i)), Allow: i%2 == 0})
	}
	return l
}
