package fallback

import (
	"errors"
	"testing"
)

func TestCheckPrefix(t *testing.T) {
	for p, want := range map[string]string{
		Prefix:                                   Prefix,
		"_zerobus/other":                         "_zerobus/other/",
		"_zerobus/a/b/":                          "_zerobus/a/b/",
		"":                                       "",
		"/":                                      "",
		"/_zerobus/x/":                           "",
		"_zerobus/":                              "",
		"_zerobus":                               "",
		"_zerobus/../x/":                         "",
		"_zerobus/a/../../b/":                    "",
		"_zerobus//x/":                           "",
		"_delta_log/":                            "",
		"data/":                                  "",
		"s3://b/_zerobus/x/":                     "",
		"_zerobus\\x\\":                          "",
		"_zerobus/./x/":                          "",
		"_zerobus/table_rejected_parquets/2026/": "_zerobus/table_rejected_parquets/2026/",
	} {
		got, err := CheckPrefix(p)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("CheckPrefix(%q) = %q, %v; want %q", p, got, err, want)
		}
		if err != nil && !errors.Is(err, ErrOutside) {
			t.Errorf("CheckPrefix(%q): %v does not wrap ErrOutside", p, err)
		}
	}
}

func TestCheckKey(t *testing.T) {
	for key, ok := range map[string]bool{
		Prefix + "a.parquet":                   true,
		Prefix + "2026/01/01/a.parquet":        true,
		Prefix + "k=v/a.parquet":               true,
		Prefix + "sig=1/token=x.parquet":       true,
		Prefix:                                 false,
		Prefix + "a/":                          false,
		Prefix + "../x.parquet":                false,
		Prefix + "a/../../x.parquet":           false,
		Prefix + "a//b.parquet":                false,
		Prefix + "_delta_log/00000.json":       false,
		Prefix + "a/_SUCCESS":                  false,
		Prefix + ".hidden/a.parquet":           false,
		"_delta_log/00000000000000000000.json": false,
		"part-0000.parquet":                    false,
		"_zerobus/other/a.parquet":             false,
		"/" + Prefix + "a.parquet":             false,
		Prefix + "a\\b.parquet":                true, // a name where "\\" is no separator
	} {
		err := CheckKey(Prefix, key)
		if (err == nil) != ok {
			t.Errorf("CheckKey(%q) = %v, want ok %v", key, err, ok)
		}
	}
	if err := CheckKey("/", Prefix+"a.parquet"); err == nil {
		t.Error("a key checked against the prefix / passed")
	}
}
