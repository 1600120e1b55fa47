package cmd

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseRenames(t *testing.T) {
	for _, tc := range []struct {
		in      []string
		want    map[string]string
		wantErr string
	}{
		{in: []string{"customer_id=customer_key"}, want: map[string]string{"customer_id": "customer_key"}},
		{in: []string{" old = new "}, want: map[string]string{"old": "new"}},
		{in: []string{"old col=new col"}, want: map[string]string{"old col": "new col"}},
		{in: []string{"`old col`=`new col`"}, want: map[string]string{"old col": "new col"}},
		{in: []string{"`a=b`=c"}, want: map[string]string{"a=b": "c"}},
		{in: []string{"`we``ird`=`a,b`"}, want: map[string]string{"we`ird": "a,b"}},
		{in: []string{"a=b", "c d=`e f`"}, want: map[string]string{"a": "b", "c d": "e f"}},
		{in: []string{"old"}, wantErr: "want OLD=NEW"},
		{in: []string{"=new"}, wantErr: "want OLD=NEW"},
		{in: []string{"`old=new`"}, wantErr: "want OLD=NEW"},
		{in: []string{"`old`x=new"}, wantErr: "text after the backquoted name"},
		{in: []string{"a,b=c"}, wantErr: "names 2 columns"},
		{in: []string{"`old=new"}, wantErr: "want OLD=NEW"},
	} {
		got, err := parseRenames(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseOrderFlag(t *testing.T) {
	for in, want := range map[string]string{"": "", "seq": "seq", " seq ": "seq", "`seq no`": "seq no", "seq no": "seq no", "`a``b`": "a`b", "`a,b`": "a,b"} {
		if got, err := parseOrderFlag(in); err != nil || got != want {
			t.Errorf("--dedupe-order %q = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"a,b", "`a", "`a`b"} {
		if got, err := parseOrderFlag(in); err == nil {
			t.Errorf("--dedupe-order %q = %q, want an error", in, got)
		}
	}
}

// TestReloadNextQuotesForTheShell: the command reload suggests to run again can be pasted
// into a shell: a table name with a backquote, renames with spaces and a staging path with a
// ' are quoted, plain ones are not.
func TestReloadNextQuotesForTheShell(t *testing.T) {
	o := &ReloadOptions{Target: TargetOptions{Table: "main.sales.`or``ders`"}, Renames: []string{"customer id=customer key", "a=b"},
		StageTo: "/Volumes/main/sales/staging/o'brien"}
	got := strings.Join(reloadNext(o, &runSummary{}, ExitPartial), "\n")
	want := `zbrecover reload 'main.sales.` + "`or``ders`" + `' --rename 'customer id=customer key' --rename a=b --stage-to '/Volumes/main/sales/staging/o'\''brien' --yes`
	if !strings.Contains(got, want) {
		t.Errorf("next steps:\n%s\nwant %s", got, want)
	}
}

// TestReloadNextConfirmsTheGuessedRenames: after a plan blocked by guessed renames, the
// summary's next step is the same reload with the exact --rename flags.
func TestReloadNextConfirmsTheGuessedRenames(t *testing.T) {
	o := &ReloadOptions{Target: TargetOptions{Table: "main.sales.orders"}, StageTo: "/Volumes/main/sales/staging/x",
		renameGuesses: []string{"customer_id=customer_key", "`a b`=c"}}
	got := strings.Join(reloadNext(o, &runSummary{}, ExitSchema), "\n")
	want := "`zbrecover reload main.sales.orders --stage-to /Volumes/main/sales/staging/x --rename customer_id=customer_key --rename '`a b`=c' --yes`"
	if !strings.Contains(got, want) {
		t.Errorf("next steps:\n%s\nwant %s", got, want)
	}
}
