// Package reload puts fallback rows back into their table and proves it, file by file.
//
// A reload is a plan (NewPlan: the readable fallback files of an inspect report, one schema
// group and one folder per statement, FILES of at most 1000 bare names, each group loaded
// through the projection its diff needs) and a run (Run: preflight, then for each batch an
// intent record, the COPY INTO statement, a result record and a classification, all in the
// journal).
//
// # What is guaranteed
//
// Each file is loaded at most once: COPY INTO skips files it already loaded into the table,
// and the journal tells a re-run what a crashed run did. Rows are not deduplicated: Zerobus
// delivery is at-least-once, so a record that Zerobus also published may now be in the table
// twice (verify --key counts them; reload --dedupe-key loads by key instead).
//
// # Classification of a batch
//
//   - inserted = expected rows (the footers' sum) → verified;
//   - 0 inserted after an earlier intent of the same batch that got no answer → settled
//     from DESCRIBE HISTORY: a COPY INTO commit by this user after that intent, with
//     numOutputRows = expected, not claimed by another batch → verified, else unknown
//     (never "the newest version": Zerobus keeps committing; never numFiles, which counts
//     data files written);
//   - 0 inserted for files no journal record shows loading → unknown, never verified (the
//     files may never have been seen, e.g. in a folder Databricks did not read);
//   - anything else → mismatch: the run stops (exit 4).
//
// Transaction conflicts are retried on the same batch with backoff; a cancelled statement is
// cancelled on the warehouse and recorded as outcome unknown, to be settled by the next run.
package reload
