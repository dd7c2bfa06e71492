// Package harden protects runner's own process from the steps it runs.
// A command or test step is a child of runner, often with runner's user:
// without this, it can read runner's API keys from /proc/<runner>/environ,
// /proc/<runner>/mem or with ptrace, or from a core dump.
//
// Process makes runner non-dumpable, which closes all four routes to any
// process without CAP_SYS_PTRACE (any non-root user, the same user
// included). ScrubEnv copies the environment to the heap and blanks the
// block the kernel keeps showing in /proc/<runner>/environ, so even a
// reader that may read it (root) finds no secret there. Root can still
// read runner's memory; a sandboxed step (package sandbox) cannot see
// runner at all.
package harden
