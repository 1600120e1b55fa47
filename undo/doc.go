// Package undo takes back exactly the rows a reload's batches loaded into a table that
// Zerobus keeps writing to, journaled per batch like the load, so that the batch's files
// can be loaded again with the right fix (the redo, by the next reload).
//
// # Evidence
//
// For each batch, the rows it loaded are named by the strongest evidence at hand, chosen per
// batch and shown in the plan with why each stronger kind did not apply:
//
//  1. row IDs (journal.UndoByRowIDs): with row tracking enabled on the table
//     (delta.enableRowTracking, never enabled by zbrecover), the add actions of the batch's
//     load commit, read from the table's _delta_log through the storage access the tool
//     already has (package delta), carry baseRowId: the batch's rows are the stable row IDs
//     [baseRowId, baseRowId + numRecords − 1] of each add, ranges merged. Stable IDs survive
//     UPDATE, MERGE, OPTIMIZE and REORG: the DELETE is exact whatever happened since.
//     DELETE FROM t WHERE _metadata.row_id BETWEEN a AND b OR …
//  2. files (journal.UndoByFiles): the data files the load commit added hold its rows and no
//     other, while no later commit removed them (read from the log: an OPTIMIZE, a DELETE or
//     MERGE rewrite removes them). DELETE FROM t WHERE _metadata.file_path IN (…)
//  3. keys (journal.UndoByKeys): with the run's keys file (reload --key), the batch's records'
//     keys, when no NULL key is among them and no other row of the table has one of them
//     (counted first; else refused with the count).
//  4. otherwise refused, saying why and what would have made it possible.
//
// A statement names at most MaxRanges row ID ranges or data files; a batch that would need
// more is refused that evidence (bounded statements).
//
// # Counts before and after
//
// Before each DELETE, what its condition matches is counted: it must equal the rows the batch
// loaded. With row IDs, the rows an UPDATE or MERGE changed since the load (their row commit
// version is no longer the load's) are counted and shown; deleting them needs a separate
// confirmation (Request.IncludeModified). After the DELETE, the table's history must show its
// commit (tagged, like loads, zbrecover:<run>:undo:<batch>:<attempt>) with exactly that many
// deleted rows (numDeletedRows); another number is a mismatch (exit 4).
//
// # Crash safety
//
// An undo intent (the DELETE, its evidence, the rows it must delete, the counts, the table's
// version before it, its tag) is journaled before the DELETE is sent, its result after, its
// outcome once the history shows the commit. A re-run after kill -9 at any moment settles a
// batch whose DELETE may have run from the history by its tags (reload's settle rules), and
// sends it again only once counted again: a DELETE by row ID ranges or by data files is
// idempotent (row IDs are never reused and a file's rows, once deleted, are in no file the
// condition names), and one by keys is sent again only while every row with those keys is
// still the batch's.
//
// # What undo never does
//
// It never enables row tracking (enabling it fails concurrent writers, Zerobus included, for
// its duration) and never RESTOREs (that would drop every Zerobus commit since). It refuses a
// run whose files cleanup deleted, unless an archive holds them (then the plan says the rows
// will be reloaded from the archive), and a load by key (its rows came in one MERGE).
package undo
