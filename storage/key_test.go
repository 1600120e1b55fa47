package storage_test

import (
	"testing"

	"github.com/zbrecover/zbrecover/storage"
)

// TestKeyEqualContains: every spelling of one place has one Key; Contains compares whole path
// elements. Hostile spellings: letter case where the service folds it (and not where it does
// not), scheme aliases, Azure's dfs and blob endpoints, upper-case hosts, trailing, doubled
// and "./" slashes, dbfs:, SAS queries.
func TestKeyEqualContains(t *testing.T) {
	const sas = "?sv=2024-05-04&sp=rl&sig=c2VjcmV0"
	cases := []struct {
		name     string
		a, b     string
		equal    bool
		contains bool // a contains b
		inside   bool // b contains a
	}{
		{"s3 trailing slash", "s3://bucket/t", "s3://bucket/t/", true, true, true},
		{"s3 doubled slashes and ./", "s3://bucket/t/x", "s3://bucket//t/./x//", true, true, true},
		{"s3a is s3", "s3a://bucket/t", "s3://bucket/t", true, true, true},
		{"S3 scheme in capitals", "S3A://bucket/t", "s3://bucket/t", true, true, true},
		{"s3 bucket case folds", "s3://Bucket/t", "s3://bucket/t", true, true, true},
		{"s3 keys keep their case", "s3://bucket/T", "s3://bucket/t", false, false, false},
		{"s3 sibling by prefix is not inside", "s3://bucket/t", "s3://bucket/t2", false, false, false},
		{"s3 folder inside", "s3://bucket/t", "s3://bucket/t/_zerobus/x", false, true, false},
		{"s3 bucket root contains all", "s3://bucket", "s3://bucket/a/b", false, true, false},
		{"s3 vs gs", "s3://bucket/t", "gs://bucket/t", false, false, false},
		{"s3 other bucket", "s3://bucket/t", "s3://bucket2/t", false, false, false},
		{"gs bucket case folds", "gs://BKT/tables/t1/", "gs://bkt/tables/t1", true, true, true},
		{"abfss dfs is wasbs blob", "abfss://c@acct.dfs.core.windows.net/t", "wasbs://c@acct.blob.core.windows.net/t", true, true, true},
		{"abfs and wasb", "abfs://c@acct.dfs.core.windows.net/t", "wasb://c@acct.blob.core.windows.net/t/", true, true, true},
		{"azure upper-case host", "abfss://c@ACCT.DFS.CORE.WINDOWS.NET/t", "wasbs://c@acct.blob.core.windows.net/t", true, true, true},
		{"azure container case folds", "abfss://Cont@acct.dfs.core.windows.net/t", "abfss://cont@acct.dfs.core.windows.net/t", true, true, true},
		{"azure blob names keep their case", "abfss://c@acct.dfs.core.windows.net/T", "abfss://c@acct.dfs.core.windows.net/t", false, false, false},
		{"azure SAS is no part of a place", "wasbs://c@acct.blob.core.windows.net/t" + sas, "abfss://c@acct.dfs.core.windows.net/t/", true, true, true},
		{"azure other account", "abfss://c@acct.dfs.core.windows.net/t", "abfss://c@acct2.dfs.core.windows.net/t", false, false, false},
		{"azure other cloud", "abfss://c@acct.dfs.core.windows.net/t", "abfss://c@acct.dfs.core.chinacloudapi.cn/t", false, false, false},
		{"azure inside with SAS", "abfss://c@acct.dfs.core.windows.net/t", "wasbs://c@acct.blob.core.windows.net/t/_zerobus" + sas, false, true, false},
		{"volume names fold", "/Volumes/main/sales/STAGING/x", "/Volumes/Main/SALES/staging/x/", true, true, true},
		{"volume dbfs:", "dbfs:/Volumes/main/sales/staging/x", "/Volumes/main/sales/staging/x", true, true, true},
		{"volume doubled slashes", "/Volumes/main/sales/staging//x/./y", "/Volumes/main/sales/staging/x/y", true, true, true},
		{"volume folders keep their case", "/Volumes/main/sales/staging/X", "/Volumes/main/sales/staging/x", false, false, false},
		{"volume root contains its folders", "/Volumes/main/sales/staging", "dbfs:/Volumes/MAIN/sales/staging/run1", false, true, false},
		{"volume sibling by prefix", "/Volumes/main/sales/staging/run1", "/Volumes/main/sales/staging/run10", false, false, false},
		{"other volume", "/Volumes/main/sales/staging/x", "/Volumes/main/sales/staging2/x", false, false, false},
		{"volume vs local /Volumes folder", "/Volumes/main/sales/staging/x", "file:///Volumes/main/sales/staging/x", false, false, false},
		{"file path and URL", "/tmp/zb/t", "file:///tmp/zb/t/", true, true, true},
		{"file doubled slashes and ./", "file:///tmp//zb/./t", "/tmp/zb/t", true, true, true},
		{"file keeps case", "/tmp/zb/T", "/tmp/zb/t", false, false, false},
		{"file inside", "/tmp/zb", "file://localhost/tmp/zb/t/_zerobus", false, true, false},
		{"file sibling by prefix", "/tmp/zb/t", "/tmp/zb/t2", false, false, false},
		{"file root", "/", "/tmp", false, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := storage.Parse(c.a)
			if err != nil {
				t.Fatal(err)
			}
			b, err := storage.Parse(c.b)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Equal(b); got != c.equal {
				t.Errorf("%s Equal %s = %v (keys %q, %q)", c.a, c.b, got, a.Key(), b.Key())
			}
			if got := b.Equal(a); got != c.equal {
				t.Errorf("Equal is not symmetric for %s, %s", c.a, c.b)
			}
			if got := a.Contains(b); got != c.contains {
				t.Errorf("%s Contains %s = %v (keys %q, %q)", c.a, c.b, got, a.Key(), b.Key())
			}
			if got := b.Contains(a); got != c.inside {
				t.Errorf("%s Contains %s = %v (keys %q, %q)", c.b, c.a, got, b.Key(), a.Key())
			}
			if !a.Contains(a) || !a.Equal(a) {
				t.Errorf("%s does not contain or equal itself", c.a)
			}
		})
	}
}

// TestKeyHasNoSecret: the Key of a location with a SAS holds no part of the query.
func TestKeyHasNoSecret(t *testing.T) {
	loc, err := storage.Parse("wasbs://c@acct.blob.core.windows.net/t?sv=1&sig=c2VjcmV0")
	if err != nil {
		t.Fatal(err)
	}
	if k := loc.Key(); k != "az://c@acct.blob.core.windows.net/t" {
		t.Errorf("Key() = %q", k)
	}
}

func TestParent(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"s3://b/a/b", "s3://b/a", true},
		{"s3://b/a", "s3://b/", true},
		{"s3://b", "s3://b/", false},
		{"/Volumes/main/sales/staging/x", "/Volumes/main/sales/staging", true},
		{"/Volumes/main/sales/staging", "/Volumes/main/sales/staging", false},
		{"/tmp/x", "file:///tmp", true},
		{"/", "file:///", false},
		{"abfss://c@a.dfs.core.windows.net/t/x", "abfss://c@a.dfs.core.windows.net/t", true},
	} {
		loc, err := storage.Parse(c.in)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := loc.Parent()
		if ok != c.ok || p.String() != c.want {
			t.Errorf("Parent(%s) = %s, %v; want %s, %v", c.in, p, ok, c.want, c.ok)
		}
	}
}
