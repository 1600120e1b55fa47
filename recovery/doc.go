// Package recovery gathers what the recovery of one table needs, once, for every command that
// recovers one: `zbrecover reload` and `zbrecover watch` prepare a reload through Prepare,
// `zbrecover cleanup` and `zbrecover watch` a cleanup through PrepareCleanup, so both take the
// same steps with the same guarantees.
//
// Prepare, in this order:
//
//  1. opens the table (tableref.Resolver) and gives it its identity, the table id that keys
//     the journal (Open does only this, for verify and cleanup);
//  2. checks the journal's place against the table (Env.CheckJournal) and takes the table's
//     lock (reload.LockTable) before anything is read: a cleanup or verify of the table is
//     told it is locked instead of acting on the run this reload is about to continue;
//  3. inspects the fallback folder under the lock (every footer, one ranged read each);
//  4. reads the table's schema from its source (the warehouse, Unity Catalog, the Delta log,
//     or a schema file) and, from the Delta log, its history (the renames it proves);
//  5. opens the staging and keys places (Env.OpenStage, which checks them with place.Check
//     before anything is written), and checks a load by key's columns against the table;
//  6. calls reload.Prepare, which takes the lock over and plans.
//
// PrepareCleanup prepares the cleanup of one run the one way `zbrecover cleanup` and
// `zbrecover watch` do: cleanup.Prepare under the table's lock, the run re-checked against
// the table by reload's rules (reload.LazyChecker, its warehouse connected on first use)
// before anything is deleted. Nothing here deletes: the Prepared's Execute does, called by
// the command or the watcher once the plan is shown or due.
//
// It takes what it needs as values (a resolver, the journal, the warehouse, a place opener,
// a logger, progress callbacks): no flags, no command, no rendering. A request that cannot be
// carried out as given is a *UsageError; everything else is the error of the step that
// failed, with nothing written.
package recovery
