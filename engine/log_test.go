package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pilot-sandbox/pilot-sandbox/engine"
	"github.com/pilot-sandbox/pilot-sandbox/internal/dockertest"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// TestContainerLogIsCapped: anything in the sandbox can write to the
// container's log through /proc/1/fd/1, and with Docker's default log the
// engine kept all of it on the host's disk (100 MB in, 105.8 MB on disk).
// Now it keeps at most the cap.
func TestContainerLogIsCapped(t *testing.T) {
	docker, id := runningSandbox(t)
	api := dockertest.NewAPI(t)
	const written = 100_000_000
	res, err := docker.Exec(context.Background(), id, service.ExecSpec{
		Cmd: []string{"bash", "-c",
			`yes "$(head -c 999 /dev/zero | tr '\0' x)" | head -c 100000000 >/proc/1/fd/1`},
		// The desktop's user: since the desktop runs as a user of its own,
		// the sandbox user cannot open /proc/1/fd/1 any more; the cap is
		// the second wall, for a desktop process gone bad.
		User:    "desktop",
		Timeout: 5 * time.Minute,
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("writing to the log: %+v, %v", res, err)
	}
	// What the engine still has of the log, as `docker logs` reads it.
	kept := api.BodySize("/containers/" + id + "/logs?stdout=1&stderr=1")
	t.Logf("%d bytes written to the log; the engine keeps %d", written, kept)
	if kept > engine.LogMaxBytes {
		t.Errorf("the engine keeps %d bytes of the log, more than the cap of %d", kept, engine.LogMaxBytes)
	}
	// The files themselves, when the engine's directory is visible here
	// (an engine on this machine, a test run as root).
	logPath := inspectRaw(t, api, id).LogPath
	onDisk, err := filesSize(logPath + "*")
	switch {
	case err != nil:
		t.Logf("the log's files (%s) cannot be read here: checked through the engine only (%v)", logPath, err)
	case onDisk > engine.LogMaxBytes+64<<10: // a file may pass its size by one message
		t.Errorf("the log takes %d bytes on disk, more than the cap of %d", onDisk, engine.LogMaxBytes)
	default:
		t.Logf("the log takes %d bytes on disk", onDisk)
	}
}

// filesSize adds up the sizes of the files that match pattern: a json-file
// log and the files it rotated to (LOG.1, ...).
func filesSize(pattern string) (int64, error) {
	if !filepath.IsAbs(pattern) {
		return 0, fmt.Errorf("%w: the engine gives no log path", fs.ErrNotExist)
	}
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		return 0, errors.Join(fs.ErrNotExist, err)
	}
	var total int64
	for _, f := range files {
		info, err := os.Stat(f)
		if err != nil {
			return 0, err
		}
		total += info.Size()
	}
	return total, nil
}
