package main

import (
	"github.com/rs/zerolog"

	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// sidecarService is what the protocol serves: the manager, and the sandbox
// ports this process exposes on the host.
type sidecarService struct {
	*service.Manager
	*ports.Exposer
}

// newSidecarService returns the service for m. The exposed ports of a
// sandbox close when it stops; stop closes them all.
func newSidecarService(m *service.Manager, log zerolog.Logger) (svc sidecarService, stop func()) {
	exposer := ports.NewExposer(m, log)
	events, unsubscribe := m.Subscribe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		exposer.Watch(events)
	}()
	return sidecarService{m, exposer}, func() { unsubscribe(); <-done }
}
