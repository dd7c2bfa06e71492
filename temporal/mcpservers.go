package temporal

import (
	"context"

	"github.com/planrunner/runner/internal/agents"
)

// The MCP servers of a step on a worker (docs/temporal.md, "MCP
// servers"). A run's steps may run on several workers, and a worker is
// not told when a run ends, so a server a step starts there is the
// step's: it ends when the step's activity returns (done, failed or
// cancelled), and every server still up ends when the worker stops
// (EndServers), so that none outlives the run or the worker. The board
// is the same as an in-process run's either way: each visit records its
// servers' tool lists and calls, whichever process answered them.

// stepServers gives one step's activity a pool of MCP servers in ctx;
// end ends them.
func (a *Activities) stepServers(ctx context.Context) (_ context.Context, end func()) {
	p := agents.NewServers()
	a.srvMu.Lock()
	if a.srvStopped {
		_ = p.Close() // the worker is stopping: the step may start none
	} else {
		if a.srvPools == nil {
			a.srvPools = map[*agents.Servers]struct{}{}
		}
		a.srvPools[p] = struct{}{}
	}
	a.srvMu.Unlock()
	return agents.WithServers(ctx, p), func() {
		// Forgotten only once ended: EndServers, meanwhile, waits for it.
		if err := p.Close(); err != nil {
			a.Log.Warn().Err(err).Msg("ending a step's MCP servers")
		}
		a.srvMu.Lock()
		delete(a.srvPools, p)
		a.srvMu.Unlock()
	}
}

// EndServers ends the MCP servers of every step still running on this
// worker (waiting for those a step is ending itself), and any a step
// would start after. The worker command calls it
// once it has stopped polling: the SDK cancels running activities on
// stop, but does not wait for them to return, so their own ends could
// come after the process has exited.
func (a *Activities) EndServers() {
	a.srvMu.Lock()
	a.srvStopped = true
	pools := a.srvPools
	a.srvPools = nil
	a.srvMu.Unlock()
	for p := range pools {
		if err := p.Close(); err != nil {
			a.Log.Warn().Err(err).Msg("ending MCP servers as the worker stops")
		}
	}
}
