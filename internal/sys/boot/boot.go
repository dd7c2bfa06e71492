// Package boot is how every runner binary starts: main calls Start
// first, then defines its flags with the shared definitions here (the
// logging flags, the Temporal connection and the worker's flags), so
// that runner, runner-temporal and the commands one hands to the other
// protect themselves alike and describe a flag with one help text.
//
// It may import internal/sys (harden, proc), internal/liveboard (the
// connection's security options) and zerolog; it is imported by the
// mains (cmd/..., temporal/cmd/...) and by internal/runs, which passes a
// connection on to runner-temporal as its flags.
package boot

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/planrunner/runner/internal/sys/harden"
	"github.com/planrunner/runner/internal/sys/proc"
)

// Options says what a binary needs beyond what every one gets.
type Options struct {
	// RunsSteps: the binary starts steps' processes, and adopts those a
	// step leaves behind (daemons that setsid) instead of PID 1, so they
	// end with their step and are reaped.
	RunsSteps bool
}

// Start is the first thing main does, before anything reads the
// environment. The API keys and plan secrets in the environment leave the
// block /proc/<pid>/environ shows, and the process becomes non-dumpable,
// so a step (a child, often of the same user) reaches them neither there
// nor through /proc/<pid>/mem, ptrace or a core dump (docs/safety.md,
// "Secrets"). SIGPIPE is handled, so output to a closed pipe (`| head`, a
// client gone) fails a write instead of killing the process: handled and
// not ignored, as an ignored signal would stay ignored in the commands
// steps run. A step of hardening that fails is a warning on stderr: name
// says whose.
func Start(name string, o Options) {
	if err := harden.ScrubEnv(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: warning: %v\n", name, err)
	}
	if err := harden.Process(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: warning: %v\n", name, err)
	}
	if o.RunsSteps {
		proc.BecomeSubreaper()
	}
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

// Exit ends the binary with code. A binary that ran steps first removes
// the steps' cgroups and stops its watchdog (proc.Shutdown), so that
// nothing it made outlives a normal exit; a second Ctrl-C, a crash or a
// kill leaves that to the watchdog.
func Exit(code int) {
	proc.Shutdown()
	os.Exit(code)
}
