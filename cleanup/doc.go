// Package cleanup deletes the fallback files a verified reload loaded, and nothing else.
//
// The only input that can justify a delete is the journal: Targets and NewPlan take the
// files of a run's verified batches (journal.State.VerifiedFiles), each with the version that
// was verified (journal.File.Precondition: ETag, generation, or size and modification time).
// A file of an unknown batch, a file added after verification, a hidden object or an
// unreadable file is never in that list, so it is never touched. A run whose loading is not
// settled (a batch planned, open, loaded, failed or mismatched) is refused with
// ErrNotCleanable; its files are left to reload or verify.
//
// Run works in chunks (one batch-delete request on S3 and Azure, 1000 keys elsewhere):
//
//  1. a delete_intent record names the chunk's files, durably, before anything is deleted;
//  2. with an archive, each file is copied there (storage.CopyObject, server-side when both
//     are one store), the copy's size and checksum are checked, and only then is the
//     original deleted;
//  3. every delete carries the verified version as its precondition (storage.DeleteAll:
//     batch requests where the store has them, else bounded concurrency, with an adaptive
//     limit that halves on throttling);
//  4. a deleted record gives each file's fate: deleted, skipped (it changed since it was
//     verified: kept), gone (already absent) or failed (the reason), with the archive copy's
//     URL.
//
// A failure never stops the run: every file is tried and reported. After a crash or Ctrl-C
// a new process continues the run: files deleted or gone are not touched again, and a file
// with an intent but no result is deleted again under the same precondition (if the first
// try had removed it, the store now says it does not exist, and it counts as gone).
package cleanup
