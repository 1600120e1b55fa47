package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/internal/iostreams"
	"github.com/zbrecover/zbrecover/undo"
)

// TestUndoFlags: undo's flags reach its options, and bad ones are usage errors (exit 2) that
// name the flag before anything is opened.
func TestUndoFlags(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("DATABRICKS_CONFIG_FILE", "/nonexistent")
	var got *UndoOptions
	io, _, _, _ := iostreams.Test()
	c := NewCmdUndo(NewFactory(io), func(_ context.Context, o *UndoOptions) error { got = o; return nil })
	c.SetArgs([]string{"main.sales.orders", "--run", "r1", "--batch", "2", "--batch", "5", "--evidence", "row-ids", "--include-modified", "--yes"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Target.Table != "main.sales.orders" || got.Run != "r1" || fmt.Sprint(got.Batches) != "[2 5]" || got.Evidence != "row-ids" || !got.IncludeModified || !got.Yes {
		t.Errorf("options %+v", got)
	}
	for _, cse := range []struct {
		args []string
		want string
	}{
		{[]string{"undo"}, "name the target"},
		{[]string{"undo", "s3://b/root"}, "table's name"},
		{[]string{"undo", "main.sales.orders", "--yes", "--dry-run"}, "--yes or --dry-run"},
		{[]string{"undo", "main.sales.orders", "--evidence", "guess"}, "--evidence"},
		{[]string{"undo", "main.sales.orders", "--batch", "0"}, "--batch 0"},
		{[]string{"undo", "a", "b"}, "accepts at most 1"},
	} {
		io, _, out, errOut := iostreams.Test()
		code := Run(context.Background(), NewFactory(io), cse.args)
		if code != ExitUsage || !strings.Contains(errOut.String(), cse.want) {
			t.Errorf("%v: exit %d, want %d naming %q\nstdout: %s\nstderr: %s", cse.args, code, ExitUsage, cse.want, out, errOut)
		}
	}
}

// TestUndoExit: a mismatch or nothing undone exits 4, batches refused or unsettled 5, an
// interrupt 130.
func TestUndoExit(t *testing.T) {
	for _, c := range []struct {
		err  error
		rep  undo.Report
		want int
	}{
		{nil, undo.Report{Undone: 2}, ExitOK},
		{nil, undo.Report{Undone: 1, Refused: 1}, ExitPartial},
		{fmt.Errorf("batch 1: %w: x", undo.ErrMismatch), undo.Report{}, ExitVerify},
		{fmt.Errorf("%w: none", undo.ErrRefused), undo.Report{Refused: 2}, ExitVerify},
		{fmt.Errorf("batch 1: %w", undo.ErrUnsettled), undo.Report{}, ExitPartial},
		{fmt.Errorf("batch 1: %w", undo.ErrInterrupted), undo.Report{}, ExitInterrupted},
		{errors.New("boom"), undo.Report{}, ExitFailure},
	} {
		if got := ExitCode(undoExit(c.err, &c.rep)); got != c.want {
			t.Errorf("%v %+v: exit %d, want %d", c.err, c.rep, got, c.want)
		}
	}
}
