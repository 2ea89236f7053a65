package engine

import "testing"

func TestEndpointBase(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		tls      bool
		want     string // "" for an error
	}{
		{"unix:///var/run/docker.sock", false, "http://docker"},
		{"unix:///var/run/docker.sock", true, "http://docker"},
		{"npipe:////./pipe/docker_engine", false, "http://docker"},
		{"tcp://10.0.0.5:2375", false, "http://10.0.0.5:2375"},
		{"tcp://docker.example:2376", true, "https://docker.example:2376"},
		{"10.0.0.5:2375", false, "http://10.0.0.5:2375"},
		{"10.0.0.5:2376", true, "https://10.0.0.5:2376"},
		{"http://10.0.0.5:2375", false, "http://10.0.0.5:2375"},
		{"http://10.0.0.5:2376", true, "https://10.0.0.5:2376"},
		{"https://10.0.0.5:2376", false, "https://10.0.0.5:2376"},
		{"tcp://[::1]:2375", false, "http://[::1]:2375"},
		{"tcp://", false, ""},
		{"ssh://me@host", false, ""},
		{"", false, ""},
	} {
		got, err := endpointBase(tc.endpoint, tc.tls)
		if got != tc.want || (err != nil) != (tc.want == "") {
			t.Errorf("endpointBase(%q, tls %v) = %q, %v; want %q", tc.endpoint, tc.tls, got, err, tc.want)
		}
	}
}

func TestNetworkName(t *testing.T) {
	for scope, want := range map[string]string{
		"true":          "pilot-sandbox",
		"":              "pilot-sandbox",
		"test":          "pilot-sandbox-test",
		"a b/c:d":       "pilot-sandbox-a-b-c-d",
		"Team_1.x-y":    "pilot-sandbox-Team_1.x-y",
		"ünïcode scope": "pilot-sandbox--n-code-scope",
	} {
		if got := NetworkName(scope); got != want {
			t.Errorf("NetworkName(%q) = %q, want %q", scope, got, want)
		}
	}
}
