// Package patch applies unified diffs to a directory tree, the way a careful
// human would: it tolerates what language models get wrong (line numbers,
// hunk counts, "@@ ... @@" headers, lost whitespace, missing a/ b/ prefixes,
// prose and markdown fences around the diff) and refuses, with a message a
// model can act on, whenever it cannot tell for sure where a change goes.
//
// An apply is all or nothing: every file's new content is computed in
// memory first, then written to a temporary file in the apply's own
// staging directory (.runner/staging, see staging.go) and renamed into
// place, and the files already written are restored if a later one fails
// or the context ends. A diff that an answer cut off at the model's token
// limit left incomplete is refused (see truncate.go). All file access
// goes through an os.Root on the target directory, and paths that climb out
// of it or pass through a symbolic link are refused.
//
// Unless told otherwise, the files as they were are kept under
// .runner/backups/<id>/ in the directory (as hard links where possible:
// the apply never writes a file in place, so the old content stays intact
// under its backup name), and Rollback puts them back.
//
// The package imports nothing else from this module.
package patch
