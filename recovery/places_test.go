package recovery

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/all"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
	"github.com/zbrecover/zbrecover/tableref"
)

// TestOpenTableJournal: a journal inside the table's root or inside a table the probes find is
// refused as a usage error, before anything is written there; a journal elsewhere opens, and
// its place is checked once: opening it costs what checking it and opening it cost, not the
// probes a second time.
func TestOpenTableJournal(t *testing.T) {
	ctx := context.Background()
	srv := s3test.NewServer(t)
	for _, key := range []string{"tables/orders/_delta_log/00000000000000000000.json", "tables/returns/_delta_log/00000000000000000000.json"} {
		if err := srv.Put(key, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	p := &Places{Opener: storage.Opener{Registry: all.Registry()}, Config: srv.Config()}
	orders, err := storage.Parse(srv.URLFor("tables/orders"))
	if err != nil {
		t.Fatal(err)
	}
	tgt := &tableref.Ref{Loc: orders}
	for _, tc := range []struct{ url, why string }{
		{srv.URLFor("tables/orders/journal"), "lies inside the table's root"},
		{srv.URLFor("tables/returns/journal"), "lies inside a table's root"},
	} {
		srv.ResetCounts()
		_, err := p.OpenTableJournal(ctx, tc.url, tgt)
		var ue *UsageError
		if !errors.As(err, &ue) || !ue.Flag || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("journal %s: %v, want a usage error saying %q", tc.url, err, tc.why)
		}
		if n := srv.Counts().Puts; n != 0 {
			t.Errorf("journal %s: %d puts before the refusal", tc.url, n)
		}
	}

	url := srv.URLFor("journals/orders")
	srv.ResetCounts()
	if err := p.CheckJournal(ctx, url, tgt); err != nil {
		t.Fatal(err)
	}
	checked := srv.Counts()
	srv.ResetCounts()
	if _, err := p.OpenJournal(ctx, url); err != nil {
		t.Fatal(err)
	}
	opened := srv.Counts()
	srv.ResetCounts()
	if _, err := p.OpenTableJournal(ctx, url, tgt); err != nil {
		t.Fatal(err)
	}
	if got, want := srv.Counts().ListPages, checked.ListPages+opened.ListPages; got != want || checked.ListPages == 0 {
		t.Errorf("opening the journal listed %d pages, want %d (%d to check it, %d to open it)", got, want, checked.ListPages, opened.ListPages)
	}
}
