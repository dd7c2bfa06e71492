//go:build !unix

package proc

// maxRunning is how many steps' processes may run at once (see the unix
// version): here, no bound runner knows of.
func maxRunning() int { return 1 << 22 }
