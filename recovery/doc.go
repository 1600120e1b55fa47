// Package recovery gathers what the recovery of one table needs, once, for every command that
// recovers one: `zbrecover reload` and `zbrecover watch` prepare a reload through Prepare,
// `zbrecover cleanup` and `zbrecover watch` a cleanup through OpenCleanup and PrepareCleanup,
// `zbrecover verify` checks a run through Verify, so each takes the same steps with the same
// guarantees.
//
// Prepare, in this order:
//
//  1. opens the table (tableref.Resolver) and gives it its identity, the table id that keys
//     the journal (Open does only this, for verify and cleanup);
//  2. checks the journal's place against the table (Places.CheckJournal) and takes the table's
//     lock (reload.LockTable) before anything is read: a cleanup or verify of the table is
//     told it is locked instead of acting on the run this reload is about to continue;
//  3. inspects the fallback folder under the lock (every footer, one ranged read each);
//  4. reads the table's schema from its source (the warehouse, Unity Catalog, the Delta log,
//     or a schema file) and, from the Delta log, its history (the renames it proves);
//  5. opens the staging and keys places (Places.OpenStage, which checks them with place.Check
//     before anything is written), and checks a load by key's columns against the table;
//  6. calls reload.Prepare, which takes the lock over and plans.
//
// PrepareCleanup prepares the cleanup of one run the one way `zbrecover cleanup` and
// `zbrecover watch` do: cleanup.Prepare under the table's lock, the run re-checked against
// the table by reload's rules (reload.LazyChecker, its warehouse connected on first use)
// before anything is deleted. OpenCleanup is the whole gathering of `zbrecover cleanup` in one
// call: the table opened for deletes under cleanup's storage policy (DeleteStorage), the
// journal checked and opened, the run asked for checked, PrepareCleanup, the archive place
// checked and the fallback folder listed for what stays. Nothing here deletes: the Prepared's
// Execute does, called by the command or the watcher once the plan is shown or due.
//
// Verify is the one path of `zbrecover verify`: the table opened and identified, the journal
// checked and opened, the run asked for checked, the warehouse connected, reload.VerifyRun.
//
// Places is the one way a run checks and opens the places it writes to (--stage-to,
// --keys-to, --archive-to, --journal) and the places its journal names.
//
// It takes what it needs as values (a resolver, the journal, the warehouse or the workspace,
// the run's places, a logger) and only UI ports as functions (the answer about a lock another
// process holds, progress): no flags, no command, no rendering, and nothing that calls back
// into the command (arch_test.go's TestRecoveryTakesValues). A request that cannot be
// carried out as given is a *UsageError; everything else is the error of the step that
// failed, with nothing written.
package recovery
