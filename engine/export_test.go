package engine

import "context"

// LogMaxBytes is the most the engine keeps of a container's log on disk:
// logMaxSize times logMaxFiles.
const LogMaxBytes = 5 << 20 * 2

// EnsureNetwork makes or finds a scope's sandbox network, as
// CreateContainer does.
func EnsureNetwork(c *Client, ctx context.Context, scope string) (string, error) {
	return c.ensureNetwork(ctx, scope)
}

// NetworkName is the name of a scope's sandbox network.
var NetworkName = networkName
