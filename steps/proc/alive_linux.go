package proc

import (
	"bytes"
	"os"
	"strconv"
)

// groupRunning scans /proc for a process of group pgid that is not a
// zombie. ok is false when /proc cannot be read.
func groupRunning(pgid int) (running, ok bool) {
	d, err := os.Open("/proc")
	if err != nil {
		return false, false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return false, false
	}
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		state, pgrp, ok := parseStat(stat)
		if ok && pgrp == pgid && state != 'Z' && state != 'X' {
			return true, true
		}
	}
	return false, true
}

// parseStat reads the state and the process group from /proc/N/stat:
// "pid (comm) S ppid pgrp ...". comm may hold spaces and parentheses, so
// fields are counted from the last ')'.
func parseStat(b []byte) (state byte, pgrp int, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	n, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], n, true
}
