package cmd

import (
	"context"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/cleanup"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/tableref"
)

// TestCleanupExitAccessDenied: a delete the store refuses exits 5 and says which credentials
// were used and what deleting needs.
func TestCleanupExitAccessDenied(t *testing.T) {
	rep := &cleanup.Report{Plan: &cleanup.Plan{}, Failed: 1, Results: []cleanup.FileResult{{Key: "k", Status: journal.DeleteFailed,
		Reason: "delete batch s3://b/t/: access denied: the credentials in use may not list or read this prefix"}}}
	loc, _ := storage.Parse("s3://b/t")
	for _, c := range []struct {
		vended bool
		want   string
	}{{true, "vended for main.s.t, which are read-only"}, {false, "the store's own credentials"}} {
		tgt := &tableref.Ref{HasName: true, Loc: loc, Vended: c.vended}
		tgt.Name, _ = (tableref.Spec{Table: "main.s.t"}).Name()
		err := cleanupExit(context.Background(), nil, rep, tgt)
		if ExitCode(err) != ExitPartial || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--storage-auth default") {
			t.Errorf("vended=%v: exit %d: %v", c.vended, ExitCode(err), err)
		}
	}
	rep = &cleanup.Report{Plan: &cleanup.Plan{}}
	if err := cleanupExit(context.Background(), nil, rep, &tableref.Ref{}); err != nil {
		t.Errorf("clean run: %v", err)
	}
}
