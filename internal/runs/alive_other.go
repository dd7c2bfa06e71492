//go:build !unix

package runs

// processAlive cannot tell here: a run that owns the lock is taken as live.
func processAlive(pid int) bool { return true }

// lockHeld cannot ask the lock here (no flock): the owner record says.
func lockHeld(path string) bool { return liveOwner(path) }
