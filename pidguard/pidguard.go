// Package pidguard keeps pilot-pidguard (resources/docker/sandbox/
// pidguard.sh), which ends fork floods, running as the sandbox user for
// one run of a sandbox's container: the sandbox user can kill it, being
// its user, so when it ends while the run goes on, another is started.
// Each sidecar that starts or finds a sandbox keeps a guard of its own;
// the oldest acts and the others stand by to take over (pidguard.sh).
//
// It must not know Docker or the sandbox's state: its caller (service)
// decides which runs need a guard, starts each one (an attached exec) and
// says whether the run goes on (Run).
package pidguard

import (
	"io"
	"time"

	"github.com/rs/zerolog"
)

// Pause is how long Keep waits before it starts the guard again after it
// ended: a sandbox that kills it in a loop costs an exec a second, no
// more.
const Pause = time.Second

// A Run is the run of a container a guard is kept for.
type Run interface {
	// Start starts the guard, attached: reading it ends when the guard
	// does (it writes to its log file, not here).
	Start() (io.ReadCloser, error)
	// GoesOn says whether the container still runs this run.
	GoesOn() bool
}

// Keep watches guard, the running guard of r, and starts another each
// time it ends, pause after, until the run ends or a guard cannot be
// started. No exec starts while the sandbox is at its process limit, so
// a guard killed together with the start of a flood is replaced only
// once the flood ends (pidguard.sh). A sandbox without a guard still has
// its process limit, so a failure is only logged, at debug level (the log
// file's): Keep may log after whoever started the run is gone (a test
// that ended, its sandbox being removed).
func Keep(r Run, guard io.ReadCloser, pause time.Duration, log zerolog.Logger) {
	for {
		io.Copy(io.Discard, guard) // until it ends
		guard.Close()
		if !r.GoesOn() {
			return
		}
		log.Debug().Msg("pilot-pidguard ended while the sandbox runs (killed from inside?): starting it again")
		time.Sleep(pause)
		var err error
		if guard, err = r.Start(); err != nil {
			log.Debug().Err(err).Msg("could not start pilot-pidguard again; fork floods will hold the sandbox's process slots")
			return
		}
	}
}
