package journal

import "testing"

// TestSameRoot: roots as records show them (a SAS redacted) are the same place however they
// are spelled; other places are not; a root that does not parse is compared as written, less
// its query and trailing "/".
func TestSameRoot(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"wasbs://c@acct.blob.core.windows.net/t?sig=REDACTED&sv=2024", "wasbs://c@acct.blob.core.windows.net/t?sig=c2VjcmV0&sv=2025", true},
		{"abfss://c@acct.dfs.core.windows.net/t/", "wasbs://c@ACCT.BLOB.CORE.WINDOWS.NET/t", true},
		{"s3a://bucket/tables/orders", "s3://bucket/tables/orders/", true},
		{"file:///tmp/zb/orders", "file:///tmp/zb//orders/", true},
		{"s3://bucket/tables/orders", "s3://bucket/tables/orders2", false},
		{"s3://bucket/tables/Orders", "s3://bucket/tables/orders", false},
		{"abfss://c@acct.dfs.core.windows.net/t", "abfss://c@acct2.dfs.core.windows.net/t", false},
		{"mem://root/x?q=1", "mem://root/x/", true},
		{"mem://root/x", "mem://root/y", false},
	} {
		if got := SameRoot(c.a, c.b); got != c.same {
			t.Errorf("SameRoot(%s, %s) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}
