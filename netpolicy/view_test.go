package netpolicy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestView: the policy as shown names every part, in the order of
// judgement, with where it came from.
func TestView(t *testing.T) {
	p := Assemble(Config{Allow: rules("bücher.de"), Ask: rules("10.0.0.0/8"), AskTimeout: 30 * time.Second},
		Repository{Deny: rules("tracker.example"), Preset: PresetOpen}, false,
		[]Kept{{Rule: mustRule("example.org:443"), Allow: true, Reason: "docs", DecidedAt: time.UnixMilli(7)},
			{Rule: mustRule("x.example:443"), Allow: true, Session: true}})
	data, err := json.Marshal(p.View())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"none":false`,
		`"order":["fixed","deny","allow","ask","preset"]`,
		`{"cidr":"169.254.0.0/16","why":"link-local, with the cloud metadata service 169.254.169.254"}`,
		`"ports":[25]`,
		`{"list":"deny","rule":"tracker.example","source":"repository"}`,
		`{"list":"allow","rule":"xn--bcher-kva.de","source":"config","written":"bücher.de"}`,
		`{"list":"allow","rule":"example.org:443","source":"kept","reason":"docs","decidedAt":7}`,
		`{"list":"allow","rule":"x.example:443","source":"session"}`,
		`{"list":"ask","rule":"10.0.0.0/8","source":"config"}`,
		`"preset":{"name":"dev","source":"default","otherwise":"ask","allow":["deb.debian.org:80",`,
		`{"cidr":"10.0.0.0/8","why":"private (RFC 1918)"}`,
		`"askTimeout":30000`,
		`"repository":{"asks":"preset open (yours is dev)\n","approved":false,"digest":"sha256:`,
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the view lacks %s:\n%s", want, data)
		}
	}
	if v := Assemble(Config{}, Repository{}, false, nil).View(); v.Repository != nil || v.Rules == nil {
		t.Errorf("a plain policy: %+v", v)
	}
}
