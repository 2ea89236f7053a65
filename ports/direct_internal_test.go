package ports

import (
	"net/netip"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// The direct route dials the container's address as the engine gives it,
// with only the port from the relay's line: whatever else the line says,
// the sandbox does not choose the address (issue 28, N1).
func TestDirectAddressIsTheContainersOwn(t *testing.T) {
	t1 := service.RelayTarget{Address: netip.MustParseAddr("172.18.0.5")}
	for _, c := range []struct {
		target service.RelayTarget
		line   string
		want   string // "" for an error
	}{
		{t1, "+4444", "172.18.0.5:4444"},
		{t1, "+65535", "172.18.0.5:65535"},
		{t1, "127.0.0.1 4444", ""},
		{t1, "+127.0.0.1:4444", ""},
		{t1, "+0", ""},
		{t1, "+65536", ""},
		{t1, "+-1", ""},
		{t1, "", ""},
		{service.RelayTarget{}, "+4444", ""}, // no address: no direct route
	} {
		got, err := directAddress(c.target, c.line)
		if got != c.want || (err == nil) != (c.want != "") {
			t.Errorf("%v, %q: %q, %v; want %q", c.target.Address, c.line, got, err, c.want)
		}
	}
}
