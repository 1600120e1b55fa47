// Package journal keeps zbrecover's durable, append-only run records: what each reload,
// verify and cleanup meant to do, started, got back and concluded, so that a re-run after a
// crash knows what the crashed process did, cleanup deletes only what was verified, and
// history can show every file's fate.
//
// # Records
//
// A run is the work on one set of fallback files of one table. Its records are numbered
// 1, 2, … (Seq) and versioned ("v": 1). Every record carries the run id, the time, the kind,
// the table's identity (TableID: the Unity Catalog table_id, else the Delta metaData.id, so a
// table dropped and recreated under the same name never inherits a run), the table name
// and the root (for display). Exactly one payload goes with each kind:
//
//	run            Header: OS user, Databricks identity, host, pid, command line, tool version
//	plan           Plan: batches (number, schema group, folder, files, expected rows, SQL)
//	intent         Intent: batch, files (key, size, ETag, generation, modtime, rows),
//	               expected rows, the statement as sent, start time
//	result         Result: inserted rows (nil when none came back), query id, table
//	               version if known, end time, error text
//	outcome        Outcome: verified | unknown | mismatch | failed, reason
//	verification   Verification: per batch expected, inserted and history rows
//	staging        Staging: original key → staged copy, size, checksum
//	delete_intent  Deletion.Files: the verified files about to be deleted
//	deleted        Deletion.Results: deleted | skipped (changed) | gone | failed, reason,
//	               the archive copy's URL when cleanup archived the file first
//	end            End: the state the process left the run in
//	merge          Merge: a step of a load by key (reload --dedupe-key): planned (staging
//	               table, key, order), intent (the MERGE as sent), result (rows inserted),
//	               dropped (the staging table)
//	keys           Keys: a keys file of the run's files (key columns, location, checksum)
//
// The fields that can hold secrets are redacted before a record is stored: the root (a SAS
// query), the command line, error texts and reasons. Names are stored verbatim, because the
// journal must give them back exactly: file keys, folders (a folder called sig=1 is a
// folder), staging locations (without query) and SQL (which never names a credential). A
// record whose verbatim fields hold a secret the process registered is refused, not
// written. The caller's record is not changed.
//
// Intents record the table version the statement started from (base_version) and, when
// the warehouse takes one, the commit tag the statement carried; outcomes record the commit
// that proved the batch (version) and what proved it (evidence: the statement's own
// answer, its tag in the history, the only candidate in the history, or the MERGE that
// followed it). A claimed commit settles no other batch of any run of the table (Facts).
//
// # Re-runs continue the run
//
// A process that continues a run (a re-run of reload, verify, cleanup) appends to the same
// run, after its own run record: LatestUnfinished finds the newest unfinished run of the
// table on the same root, Continue writes the new process's run record after the last one
// read, and the process settles the open batches before it sends anything else. A run's
// records are therefore the whole story of its files, whichever processes wrote them, and
// two processes can never both continue a run: the record number they both want exists
// once, whatever each writes (create-only on object stores, whose record names hold the
// number alone; checked and written under an flock of the run file locally) and the second
// gets ErrRunConflict.
//
// # Layouts
//
// Local directory (the default; DefaultDir is $XDG_STATE_HOME/zbrecover, else
// ~/.local/state/zbrecover):
//
//	<dir>/<table_id>/<run_id>.jsonl      one record per line
//	<dir>/<table_id>/<run_id>.snapshot   the run's snapshot (see Snapshots)
//	<dir>/<table_id>/lock.json           the table's lock (flock), holding its holder
//
// Any writable storage URL (`--journal URL`), one object per record because object stores
// cannot append:
//
//	<prefix>/<table_id>/runs/<run_id>/<seq:08d>.json
//	<prefix>/<table_id>/snapshots/<run_id>.snapshot
//	<prefix>/<table_id>/lock.json
//
// Earlier versions named records <seq:08d>-<kind>.json, which guarded a number only against a
// record of the same kind; those names are still read (a record's kind must then match its
// name), and a run begun under them is continued under the new ones.
//
// A journal kept under a table's storage root goes in HiddenDir (`<root>/_zbrecover/`):
// names starting with "_" are skipped by Spark's file listing, so COPY INTO and inspect never
// see it.
//
// # Durability
//
// Append returns only when the record is durable. Locally the line is written with one
// write to a file opened O_APPEND and fsynced; creating a run file fsyncs its folder, and
// creating a table folder fsyncs the journal directory. On an object store the record is a
// create-only Put, durable when acknowledged. A crash in the middle of a local write leaves
// a torn last line (no newline): readers leave it out with a warning, and the next process
// to append cuts it off first, so that a torn line is never followed by another. Any other
// damage is an error naming the run and line: the journal never guesses.
//
// # Locks
//
// A per-table lock keeps two reloads, or a reload and a cleanup, of one table from
// overlapping. Take it before Start or Continue and hold it until the last record.
//
//   - Local: an exclusive, non-blocking flock on lock.json, which records pid, host, user,
//     command and time. The kernel releases it when the holder exits or dies, so it is never
//     stale. (Systems without flock use a create-exclusive file with the object-store rule.)
//   - Object store: a create-only lock.json with the holder (user, host, pid and, on Linux,
//     the boot and pid namespace the pid belongs to) and the time, released by a delete with
//     the object's version as precondition, after checking it is still the holder's. Object
//     stores have no lease and cannot tell that a holder died, so a lock outlives a crashed
//     holder.
//
// A lock held by another process gives a *LockedError (errors.Is ErrLocked) that says who
// holds it, from where, running what, since when, and what may break it (Rule), because
// breaking the lock of a process that is still working would let two runs overlap:
//
//   - a live holder (a flock, or a holder of this host whose pid is running) is never broken;
//   - a holder that cannot be checked from here (another host), whose lock is younger than
//     its lease (TTL, DefaultLockTTL unless given), is broken only when LockOptions.Break
//     confirms it (the operator, at a terminal: --yes is not enough);
//   - a holder of this host that has ended, or a lock older than its lease, is broken when
//     Break says so (--yes), and without asking when Force is set and the lease is over.
//
// The age counts from the later of the holder's clock and the store's.
//
// A lock can be held as a lease (LockOptions.Lease, for a long-running holder such as
// zbrecover watch): the lock records the lease, its holder renews it (Renewer) well within
// it, and every process judges the lock by that lease from its last renewal instead of by its
// own TTL. A live lock younger than its lease is never broken; a holder that stopped renewing
// leaves a lock older than its lease once the lease has passed, which Force breaks. On an
// object store a renewal is a create-only object <table_id>/lease/<token>-<n>.json beside the
// lock (the previous one deleted): not every store can rewrite the lock object on a condition,
// and a delete then create would leave a moment in which another process takes the lock. A
// flock needs no renewal (it lasts as long as its holder). Renew says when the lock was lost
// (ErrLockLost): its holder must stop what the lock guards.
//
// # Replay
//
// Replay turns a run's records into its State with no I/O:
//
//   - records are taken in seq order; a gap, a record of another run or table, or a first
//     record other than run is an error naming the run;
//   - a run some of whose numbers are held by two records (two processes wrote it at once:
//     a journal of an earlier version) is read by the wedge rule (see Wedge): every record is
//     kept, a batch the forked records name is verified only by its own answer, tag or MERGE,
//     mismatched when two of its statements inserted rows, else unknown; State.Wedge and a
//     warning say so. A record stored twice with the same bytes is read once;
//   - a record of a kind this version does not know is kept (State.Unknown) and reported
//     (State.Warnings), not fatal;
//   - a batch is planned; open after an intent (and stays open after a result without a row
//     count: an error, a lost response or an interrupt, since the statement may have
//     committed); loaded after a result with a count; then verified, unknown, mismatch or
//     failed by its latest outcome. An outcome needs an intent; a result needs an open
//     intent; a new intent is allowed only for a planned, failed or unknown batch, or an
//     open one whose statement returned an error (settled from history by the caller);
//   - a delete intent may name only files of verified batches, with the verified version;
//     a deleted record only files with a delete intent;
//   - in a load by key, batches load into the staging table and are in the table only once a
//     MERGE result with a row count follows them: before that, VerifiedFiles leaves them out,
//     and the run is unfinished (a re-run sends the MERGE) until the MERGE committed after the
//     last batch and the staging table is dropped;
//   - the run is cleaned when every verified file is deleted or gone, partially cleaned when
//     some are; otherwise mismatch, loading (work pending and the last process wrote no
//     end), unknown, failed, planned or verified, the first that applies;
//   - a failed batch (the warehouse refused its statement) still counts as possibly loaded
//     in every skip list: no other run loads its files through another path on that word;
//   - an undo (zbrecover undo) takes a verified batch back, as a load puts it in: an undo
//     intent (the DELETE, the evidence naming the rows, the rows it must delete) makes the
//     batch undoing; an undo result needs an open undo intent; an undo outcome makes it
//     undone, or verified again when nothing was deleted (the warehouse refused the
//     DELETE). A new undo intent is allowed only for a verified batch, or an undoing one
//     whose DELETE returned an error (settled from history by the caller). An undoing batch
//     counts as possibly loaded; an undone one does not: its files are not in LoadedKeys
//     (a reload may load them again, through a path no load read: Facts counts them by key
//     in Undone), not in VerifiedFiles (cleanup keeps them), and no load outcome may be
//     recorded for it again (its old commit proves nothing now). The run is undoing while
//     an undo is open, undone when every batch is, partially undone when some are and the
//     rest are verified.
//
// Records are replayed as they are read, one at a time (a run is never held whole), and a
// record the replay decoded for itself shares its files' keys and ETags with the state.
//
// State.OpenBatches are what a re-run settles from the table's history first;
// State.Remaining what it sends; State.VerifiedFiles the only files cleanup may delete,
// each with its precondition; LoadedKeys (over every run of a table) the files a re-run or
// staging must not load again, or through a second path.
//
// # Snapshots
//
// Runs, Facts, FactsFor, LoadedKeys and LatestUnfinished need, of every run of a table, only
// what a snapshot holds: the run's summary (history's line), whether a re-run continues it,
// its source, the commits its batches claim and the batches whose commit is unknown, the keys
// of its undone files, and its files that are verified or may be loaded. A snapshot is derived from the run's records and
// can be rebuilt from them at any time; it is never the source of truth:
//
//   - it names the records it was made from (their fingerprint: how many, how many bytes,
//     and a checksum: the CRC-32C of the run file's complete lines locally, the sum of the
//     CRC-64s of the record objects' listed name, size, ETag, generation, MD5 and
//     modification time on an object store, whose record objects are created once);
//   - it is read only when the run's records as stored now have that fingerprint (locally: the
//     file's complete lines are those bytes, and at most a torn line follows them); a
//     snapshot that is missing, of another format, damaged (each of its sections carries its
//     own CRC-32C), or stale (the run was continued, a record was changed or added) is
//     ignored, and the run is replayed from its records;
//   - a process writes the snapshot of its run when it appends an end record, and a reader
//     that replayed a run whose last record is an end record writes it (so that a journal of
//     an earlier version gets its snapshots on its first read); a snapshot that cannot be
//     written is not an error: the run is replayed next time;
//   - ReadState, and so every run a command works on, always replays the records.
//
// Within one process, the summaries read are kept by the identity of the records they were
// read at (a local file's size, times and inode; an object store's fingerprint), so that a
// command that reads a table's runs several times reads each run once; a local run file
// replayed, or matched against its snapshot, is not read again to append to it while its
// identity is unchanged.
package journal
