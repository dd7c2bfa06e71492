// Package board is the blackboard: the run's shared state and audit log.
//
// Entries are appended, never edited. An entry with a key is also a
// key-value write; the key's live value is its newest unexpired entry. The
// board also holds the step records and model recordings of a run, and
// persists all of it as blackboard.json plus an append-only journal, so a
// run killed at any moment loses nothing.
//
// The package is the board's logic and its storage; the tree shows which
// file is which:
//
//   - Logic, in the plain-named files: entries and their indexes
//     (board.go, entry.go, index.go, id.go, value.go), keys and their
//     checks (key.go), permissions, conflicts and change notices
//     (shared.go), leases (lease.go) and agents' heartbeats
//     (heartbeat.go), secret masking (redact.go), the large strings held
//     once in memory (held.go), and what the board keeps of each step
//     small: entries and step records as rows (entryrow.go, steprow.go),
//     small metas and inputs as their JSON (pack.go).
//   - Storage, in the store_*.go files: blackboard.json and its journal
//     (store_file.go, store_journal.go), their encoder and decoders
//     (store_encode.go, store_decode.go, store_linedecode.go), large
//     strings stored once or as slices of another (store_blob.go,
//     store_blobslice.go), and the loads that decode only what is read
//     (store_lazy.go, store_rawsave.go, store_livekeys.go,
//     store_standalone.go).
//
// Storage is not a package of its own because it works on the board's
// private representation, not on a copy of it: entries kept as rows,
// some decoded lazily (Entry.lazy), metas kept packed (Entry.packedMeta),
// step records kept as rows and recordings whose large strings are held by key
// (StepRecord.held), the journal's watermark and the blobs it has
// written (Board.journalN, Board.blobsKnown). An interface between the two would
// either export all of that or copy it on every load and save, and the
// loads and saves are tuned (bench_test.go, docs/benchmarks.md). What
// does stand apart is apart: the run's ownership lock is
// internal/board/boardlock, and the board's markdown document is
// internal/view/boardview.
//
// It may import the standard library, internal/bigjson,
// internal/sys/readlimit, internal/sys/safefs (its files are in a
// directory steps may write) and internal/board/boardlock; nothing that runs,
// serves or presents a plan (engine, steps, liveboard, views), which all
// import it.
package board
