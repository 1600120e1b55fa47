package warehouse_test

import (
	"encoding/json"
	"testing"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

// TestUnknownsJSON: a partial document changes only the fields it names; enums go by name;
// a misspelt field changes nothing.
func TestUnknownsJSON(t *testing.T) {
	u := warehouse.Unknowns{GlobPaths: true, HistoryUserName: "sp"}
	if err := u.Patch([]byte(`{"path_access":"plain","copy_conflict":"none","refuse_user_metadata":true}`)); err != nil {
		t.Fatal(err)
	}
	want := warehouse.Unknowns{GlobPaths: true, HistoryUserName: "sp", PathAccess: warehouse.OverlapPlain,
		CopyConflict: warehouse.ConflictNone, RefuseUserMetadata: true}
	if u != want {
		t.Errorf("after Patch: %+v, want %+v", u, want)
	}
	for _, bad := range []string{`{"glob_path":true}`, `{"path_access":"open"}`, `{"schema_auto_merge":"yes"}`} {
		before := u
		if err := u.Patch([]byte(bad)); err == nil || u != before {
			t.Errorf("Patch(%s) = %v, unknowns %+v", bad, err, u)
		}
	}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var back warehouse.Unknowns
	if err := json.Unmarshal(b, &back); err != nil || back != want {
		t.Errorf("round trip of %s = %+v %v", b, back, err)
	}
}
