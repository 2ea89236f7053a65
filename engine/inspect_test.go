package engine_test

import (
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
)

// rawContainer is what the tests read of `docker inspect`: what Docker
// itself reports, not what the engine package maps.
type rawContainer struct {
	Name   string
	Config map[string]any
	// HostConfig is kept whole, to make a container again from it.
	HostConfig      map[string]any
	LogPath         string
	NetworkSettings struct {
		Networks map[string]struct {
			NetworkID string
			IPAddress string
		}
	}
}

func inspectRaw(t *testing.T, api *dockertest.API, id string) rawContainer {
	t.Helper()
	var c rawContainer
	api.GetJSON("/containers/"+id+"/json", &c)
	return c
}
