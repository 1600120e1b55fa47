package reload

import (
	"context"
	"fmt"
	"testing"
)

// TestPhasesTellTheirProgress: VALIDATE counts its statements and loading its batches, each
// from 0 to its total and in that order, so that a progress bar ends with its phase; with
// NoValidate the one probe is the VALIDATE phase.
func TestPhasesTellTheirProgress(t *testing.T) {
	for _, noValidate := range []bool{false, true} {
		t.Run(fmt.Sprintf("novalidate=%v", noValidate), func(t *testing.T) {
			sc := newScene(t, 6, 2, 10)
			var calls []string
			tell := func(phase string) func(done, total int) {
				return func(done, total int) { calls = append(calls, fmt.Sprintf("%s %d/%d", phase, done, total)) }
			}
			o := testOpts
			o.BatchFiles = 2
			o.NoValidate = noValidate
			p, err := Prepare(context.Background(), sc.deps(t, true), sc.tgt, sc.report(), sc.table, o)
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Execute(context.Background(), RunOptions{Progress: Progress{Validate: tell("validate"), Load: tell("load")}})
			p.Close()
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"validate 0/3", "validate 1/3", "validate 2/3", "validate 3/3", "load 0/3", "load 1/3", "load 2/3", "load 3/3"}
			if noValidate {
				want = append([]string{"validate 0/1", "validate 1/1"}, want[4:]...)
			}
			if fmt.Sprint(calls) != fmt.Sprint(want) {
				t.Errorf("progress told\n%v\nwant\n%v", calls, want)
			}
		})
	}
}
