//go:build !unix

package liveboard

// privateDir: without Unix permissions to check, the socket goes to a
// fresh directory of its own.
func privateDir(dir string) bool { return false }
