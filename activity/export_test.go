package activity

import "time"

// SetLease shortens the user's lease, for a test of a vanished holder.
func (c *Control) SetLease(d time.Duration) { c.lease = d }
