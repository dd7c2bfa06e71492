//go:build !unix

package proc

type watchdog struct{}

func startWatchdog(*stepCgroup) *watchdog { return nil }
func (*watchdog) arm(int)                 {}
func (*watchdog) disarm()                 {}

// Shutdown has nothing to remove where there is no watchdog.
func Shutdown() {}
