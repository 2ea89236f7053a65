package service

import "context"

// PolicyRound applies the lifecycle policy once to every sandbox, as Run
// does each round, for the tests and benchmarks outside the package.
func (m *Manager) PolicyRound(ctx context.Context) { m.policyRound(ctx) }
