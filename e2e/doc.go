// Package e2e holds the end-to-end tests: each package below drives zbrecover as an operator
// does and asserts what the operator would check (exit codes, statements sent, rows in the
// table, files left, the words on stderr).
//
//   - e2etest: what the others share: the binaries, built once per test process; a running
//     `zbrecover demo serve` and the release binary driven against it; its statement log,
//     volumes and fixtures.
//   - recovery: the recovery in process against an in-process local workspace (reload, keys,
//     staging, cleanup on every storage emulator, the terminal in tmux).
//   - script: testscript scenarios of the real binary (testdata/script).
//   - served: the release binary against `demo serve` on managed tables, staged: proof of
//     load, keys, staging, scan, doctor, places and identity; the terminal (a bar per phase,
//     the interrupt notice, history --watch) in tmux panes of 60 and 120 columns.
//   - servedcleanup: cleanup's safety cases against `demo serve`, every refusal end to end.
//   - reliability: faults, throttling, concurrency, remote journals and locks, staging figures.
//   - kill: kill -9 of a staged reload at random moments while Zerobus commits; every re-run
//     converges.
//   - golden: what the release binary prints against `demo serve` for every command of a
//     whole recovery (an interrupted reload, its continued-run prompt and totals, verify,
//     the cleanup plan, history and the recovery's summary, undo's plan) and after the
//     usual mistakes, in text and JSON, pinned in testdata/ (-update rewrites them).
//   - undo: undo against `demo serve` while Zerobus commits: a wrong load undone by row IDs,
//     files and keys (or refused) and loaded again right; OPTIMIZE in between; cleaned runs
//     with and without an archive; kill -9 of an undo at random moments.
//   - watch: zbrecover watch against `demo serve` over fifty tables that Zerobus keeps
//     writing to: tables break and get fixed, alerts, cleanup after --cleanup-after, the
//     metrics scraped; two watchers on one journal; kill -9 of a watcher at random moments.
package e2e
