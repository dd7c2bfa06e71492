// Package docs holds runner's documentation (the Markdown pages beside this
// file). It has no code; its tests keep the pages true: links resolve,
// plans validate, the CLI reference matches the help, and every runner
// command shown runs or at least parses.
package docs
