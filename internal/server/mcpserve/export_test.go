package mcpserve

// SetTaskPage sets how many tasks tasks/list gives at once, for a test of
// its pages; it returns a func that puts it back.
func SetTaskPage(n int) func() {
	old := taskPage
	taskPage = n
	return func() { taskPage = old }
}
