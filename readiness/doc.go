// Package readiness says when a run of a sandbox's container has proved
// ready (docs/protocol.md, Containers: readiness): it waits for a run's
// desktop to answer (Wait).
//
// It must not know Docker, the sandbox's state machine or how a network
// is enforced: its caller (service) gives it a Desktop to look at and
// probe, and decides what a ready run is (running) and what one that
// never answers is (an error in its state).
package readiness
