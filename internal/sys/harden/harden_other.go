//go:build !linux

package harden

// Process does nothing where there is no prctl(PR_SET_DUMPABLE).
func Process() error { return nil }

// ScrubEnv does nothing where there is no /proc/self/mem.
func ScrubEnv() error { return nil }
