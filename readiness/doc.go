// Package readiness says when a run of a sandbox's container has proved
// ready (docs/protocol.md, Containers: readiness): it waits for a run's
// desktop to answer (Wait), keeps in the user's state what the user's
// processes proved of a run so that the others need not prove it again
// (Marks: the desktop answered, the network's rules were loaded), and
// runs the background waits for runs found not ready yet, at most one per
// project at a time (Watcher).
//
// It must not know Docker, the sandbox's state machine or how a network
// is enforced: its caller (service) gives it a Desktop to look at and
// probe and a Carrier that says whether a proxy is carried, and decides
// what a ready run is (running) and what one that never answers is (an
// error in its state).
package readiness
