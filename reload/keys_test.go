package reload

import (
	"reflect"
	"testing"
)

func TestParseKeys(t *testing.T) {
	for in, want := range map[string]Keys{
		"id":                  {"id"},
		" id , region ":       {"id", "region"},
		"order id":            {"order id"},
		"`a,b`,c":             {"a,b", "c"},
		"`we``ird`, id":       {"we`ird", "id"},
		"we`ird":              {"we`ird"},
		"`  padded  `":        {"  padded  "},
		"`order id`,`seq no`": {"order id", "seq no"},
	} {
		got, err := ParseKeys(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseKeys(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "id,", ",id", "`id", "`id`x", "id,ID"} {
		if k, err := ParseKeys(bad); err == nil {
			t.Errorf("ParseKeys(%q) = %q, want an error", bad, k)
		}
	}
}
