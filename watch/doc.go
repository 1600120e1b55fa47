// Package watch recovers parked records continuously: cycle after cycle (Watcher.Run) it
// scans a scope of Unity Catalog for tables whose fallback folder holds files older than a
// minimum age (package scan), and for each such table, under a lease on the table's lock in
// the shared journal:
//
//  1. gathers and prepares its reload through recovery.Prepare, the path zbrecover reload
//     takes (the table identified and locked, every footer read, the schema and its history,
//     the staging place checked): each table's copies are staged to its own folder under the
//     staging place (TablePlace), and loaded from there;
//  2. reports the schema groups that block the load (an event, and an alert once until the
//     table is fixed): their files wait, the table's schema is never changed;
//  3. loads the other groups (staged, tagged, each batch journaled before and after its
//     statement, verified by its rows) and verifies the run (reload.VerifyRun);
//  4. with Config.CleanupAfter, cleans up the table's runs: only files of batches verified at
//     least that long ago, that cleanup proves in the table again now (cleanup.Prepare), are
//     deleted, or archived then deleted. Without it nothing is deleted.
//
// One watcher works on a table at a time: its lock is taken as a lease (journal
// LockOptions.Lease) and renewed every third of it; another watcher, or an operator's reload
// or cleanup, finds the table locked and the watcher leaves it for the cycle (SkippedLocked).
// A watcher killed (kill -9) leaves its lease behind: the next watcher of this host breaks
// it at once (its holder is gone), one of another host once the lease has passed; the reload
// then continues the unfinished run from the journal, as zbrecover reload does, and no file
// is loaded twice. A lost lease cancels the table's work.
//
// Every step is an Event (one JSON line each with JSONLines); blocked tables, failures,
// quarantines and runs that need review are also sent to the alert (CommandAlert). A failed
// table is tried again after a backoff that doubles, and quarantined after MaxFailures
// cycles in a row; a workspace that cannot be reached ends the cycle without holding it
// against any table. Metrics keeps Prometheus metrics and answers /healthz.
//
// Closing Run's stop channel (SIGTERM) stops at a journaled point: the statement in flight
// finishes (reload.RunOptions.Stop), no further batch or table starts, the lease is released.
package watch
