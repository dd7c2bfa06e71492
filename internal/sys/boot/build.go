package boot

import "runtime/debug"

// BuildInfo is what Go recorded of this binary's build: the module
// version `go install …@vX` gives ("" for a build from a checkout), the
// VCS commit (12 hex digits, "" when not recorded) and whether the tree
// had uncommitted changes.
func BuildInfo() (module, rev string, modified bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", "", false
	}
	if v := bi.Main.Version; v != "(devel)" {
		module = v
	}
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.modified":
			modified = kv.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return module, rev, modified
}
