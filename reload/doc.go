// Package reload puts the rows of Zerobus fallback files back into their table with COPY INTO
// (or MERGE, for a load by key), through a SQL warehouse, and proves from the table's history
// which commit holds each batch's rows.
//
// # Prepare, then Execute
//
// Prepare takes the table's lock in the journal and, under it, reads what every run of the
// table did (journal.FactsFor), finds the unfinished run on this root that a new run
// continues, reads the table's history for runs of other journals (foreign.go), decides the
// source the statements read (the fallback folder, or the staging location with
// Options.StageTo) and plans the new batches (NewPlan: the readable fallback files of an
// inspect report that no run loaded or may have loaded, one schema group and one folder per
// statement, FILES of at most 1000 bare names, each group loaded through the projection its
// schema diff needs). It sends nothing to the warehouse and changes nothing. A plan a schema
// group blocks is returned with ErrBlocked, its suggested table changes with it.
//
// (*Prepared).Execute runs it with RunOptions (the statements' identity, the journal header,
// progress): it settles the continued run's batches whose statement may have run without its
// answer being recorded, stages the new files (staged.go names each copy by what its
// original is: table id, key and version), claims the table with an empty tagged commit, then
// for each batch journals an intent, sends the statement, and journals the answer and the
// batch's outcome. Close releases the lock.
//
// # Which commit holds a batch
//
// One rule (settle.go) decides it for reload, verify and cleanup's re-check: a load commit
// after the batch's first statement that carries the batch's own tag (the evidence of a tag),
// else the only untagged load commit by the statements' identity that wrote exactly the
// batch's rows and that no other batch of any run claims or may have made (the weaker
// evidence of history). Anything else settles nothing: the batch stays unknown and its files
// are kept. A commit's numOutputRows is compared with the footers' rows, never numFiles
// (which counts data files written), and never "the newest version" (Zerobus keeps
// committing).
//
// # Outcomes of a batch
//
//   - its statement answered with the footers' rows, and its commit is proved → verified;
//   - no answer (a lost connection, a timeout, a kill) → settled by the rule above on the next
//     run, never sent again before it is settled;
//   - 0 rows for files no journal record shows loading → unknown, never verified (the files
//     may never have been read);
//   - any other number of rows → mismatch: the run stops (exit 4).
//
// Transaction conflicts are retried on the same batch with backoff; a cancelled
// statement is cancelled on the warehouse and recorded as outcome unknown.
//
// # What is guaranteed
//
// Each file is loaded at most once by this tool: COPY INTO skips files it already loaded
// into the table, a staged copy's path is one per file version, and the journal tells a
// re-run what a crashed run did. Rows are not deduplicated: Zerobus delivery is at least once,
// so a record Zerobus also published may be in the table twice (verify --key counts them; a
// load by key, Options.Dedupe, inserts only the keys the table lacks, and a key with a NULL
// column matches nothing and proves nothing).
//
// # Files
//
//	prepare.go   Prepare, Options, Deps, the table's lock (LockTable)
//	plan.go      NewPlan: batches, folders, projections, blocked groups
//	work.go      what a run will do, for the plan and the continue prompt
//	execute.go   Execute: the batches' statements, journaled, and the report
//	statement.go a batch's COPY INTO (or VALIDATE) as the run sends it
//	preflight.go the VALIDATE checks before the first load
//	settle.go    which commit holds a batch (one rule)
//	history.go   reading DESCRIBE HISTORY (ParseHistory, Commit)
//	tag.go       commit tags and the tagging probe (databricks.ProbeTagging)
//	foreign.go   runs of other journals in the history, the claim commit
//	stage.go     copying files to the staging location, the staging claim
//	staged.go    the staged copies' names (StagedPath)
//	keys.go      key columns, the overlap of parked records with the table (Overlap)
//	keysfile.go  writing a keys file (BuildKeys), the run's before its first load
//	keycheck.go  checking a run's keys against the table
//	dedupe.go    the load by key (MERGE through a staging table)
//	verify.go    verify's and cleanup's re-check of a run (Checker)
//	undo.go      reading an undo's DELETE back from the history (SettleDelete)
package reload
