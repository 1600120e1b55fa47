// Package cleanup deletes the fallback files whose rows a fresh check of the table proves, and
// nothing else.
//
// # Prepare, then Execute
//
// Prepare takes the table's lock in the journal, picks the run (Select: the one named, or the
// newest on the root with something left to delete), refuses a run whose journal names any key outside
// the fallback folder (Confined) or whose loading is not settled (Cleanable: a batch planned,
// open, loaded, failed, mismatched or being undone, or a load by key whose MERGE has not
// committed; each wraps ErrNotCleanable), re-checks every batch against the table with Config.Checker (its
// own commit in the history as the journal recorded it, or every key of its files in the
// table) and plans (NewPlan). Nothing is deleted or written before Execute.
//
// The only input that can justify a delete is that re-check over the journal: the plan takes
// the files of verified batches the re-check proves (Candidates), each with the version that
// was verified (journal.File.Precondition: ETag, generation, or size and modification time).
// A file of an unknown batch, of a batch the run's latest verify failed, of an undone batch, a
// file added after verification, a hidden object or an unreadable file is never in that list;
// each kept file is listed with the reason and what would settle it (Plan.Kept).
//
// (*Prepared).Execute records the re-check, then deletes in chunks (RunPlan; one batch-delete
// request on S3 and Azure, 1000 keys elsewhere):
//
//  1. a delete_intent record names the chunk's files, durably, before anything is deleted;
//  2. with an archive (Options.Archive), each file is copied there (storage.CopyObject,
//     server-side when both are one store), the copy's size and checksum are checked, and
//     only then is the original deleted; an archive that is a second place for the run's
//     files is refused (CheckArchive);
//  3. every delete carries the verified version as its precondition (storage.DeleteAll:
//     batch requests where the store has them, else bounded concurrency, with an adaptive
//     limit that halves on throttling);
//  4. a deleted record gives each file's fate: deleted, skipped (it changed since it was
//     verified: kept), gone (already absent) or failed (the reason), with the archive copy's
//     URL.
//
// Then it deletes the staged copies of the files whose batches the re-check proved. DryRun
// prints every delete instead and writes nothing.
//
// # What is guaranteed
//
// A failure never stops the run: every file is tried and reported. After a crash or Ctrl-C
// a new process continues the run: files deleted or gone are not touched again, and a file
// with an intent but no result is deleted again under the same precondition (if the first
// try had removed it, the store now says it does not exist, and it counts as gone).
package cleanup
