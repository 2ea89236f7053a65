package engine

import (
	"context"
	"net"
	"strings"
)

// LogMaxBytes is the most the engine keeps of a container's log on disk:
// logMaxSize times logMaxFiles.
const LogMaxBytes = 5 << 20 * 2

// EnsureNetwork makes or finds a scope's sandbox network, as
// CreateContainer does.
func EnsureNetwork(c *Client, ctx context.Context, scope string) (string, error) {
	return c.ensureNetwork(ctx, scope)
}

// TrySizeBound makes the client try --storage-opt size at its next create,
// whatever the storage driver, as it does on xfs.
func TrySizeBound(c *Client) { c.setDiskLimit(true, "tried by a test") }

// DriverBoundsSize says whether a storage driver may bound a layer.
var DriverBoundsSize = driverBoundsSize

// DialEngine makes one new connection to the client's engine, as its
// requests and streams do: through the ssh dialer for an ssh:// engine,
// else to its unix socket.
func DialEngine(c *Client, ctx context.Context) (net.Conn, error) {
	if c.ssh != nil {
		return c.ssh.DialContext(ctx, "", "")
	}
	var d net.Dialer
	return d.DialContext(ctx, "unix", strings.TrimPrefix(c.endpoint, "unix://"))
}
