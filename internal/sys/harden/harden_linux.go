package harden

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Process makes this process non-dumpable (prctl PR_SET_DUMPABLE 0): its
// /proc/PID/environ, mem, maps, fd and the like become readable only with
// CAP_SYS_PTRACE, ptrace attach needs it too, and it leaves no core dump.
// The processes it starts are dumpable again after their execve, as usual,
// so internal/sys/proc still reads their environment for its token.
func Process() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl PR_SET_DUMPABLE: %w", err)
	}
	return nil
}

// ScrubEnv moves the whole environment to the heap and overwrites the
// original block (the memory between env_start and env_end of
// /proc/self/stat, which is what /proc/PID/environ shows however often
// os.Unsetenv is called) with zero bytes. os.Getenv, os.Environ and the
// environment of started processes are unchanged. Call it first thing in
// main: a string read from the environment before it (os.Getenv in an
// init) would be blanked with the block.
func ScrubEnv() error {
	// Fresh copies of names and values: until now they are slices of the
	// very block about to be blanked.
	env := os.Environ()
	kvs := make([][2]string, 0, len(env))
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		kvs = append(kvs, [2]string{strings.Clone(k), strings.Clone(v)})
	}
	os.Clearenv()
	for _, kv := range kvs {
		if err := os.Setenv(kv[0], kv[1]); err != nil {
			return fmt.Errorf("restoring %s: %w", kv[0], err)
		}
	}
	start, end, err := envBlock()
	if err != nil {
		return err
	}
	if end <= start {
		return nil
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("scrubbing the environment: %w", err)
	}
	defer mem.Close()
	if _, err := mem.WriteAt(make([]byte, end-start), int64(start)); err != nil {
		return fmt.Errorf("scrubbing the environment: %w", err)
	}
	return nil
}

// envBlock reads env_start and env_end (fields 50 and 51) of /proc/self/stat.
func envBlock() (start, end uint64, err error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("scrubbing the environment: %w", err)
	}
	// comm (field 2) may hold spaces: fields are counted after its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("scrubbing the environment: /proc/self/stat unreadable")
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 49 {
		return 0, 0, fmt.Errorf("scrubbing the environment: /proc/self/stat has no env_start (kernel before 3.5)")
	}
	start, err1 := strconv.ParseUint(f[47], 10, 64)
	end, err2 := strconv.ParseUint(f[48], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("scrubbing the environment: bad env_start/env_end in /proc/self/stat")
	}
	return start, end, nil
}
