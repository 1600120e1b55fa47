package reload

import "testing"

// TestSameSource: two spellings of one source folder that statements would name alike are
// one source; one place spelt two ways in SQL (abfss:// and wasbs://) is not, and neither are
// two places.
func TestSameSource(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"/Volumes/main/sales/staging/run1/", "/Volumes/main/sales/staging/run1", true},
		{"/Volumes/main/sales/STAGING/run1", "dbfs:/Volumes/Main/sales/staging//run1/", true},
		{"s3a://lake/stage/./run1", "s3://lake/stage/run1/", true},
		{"/Volumes/main/sales/staging/Run1", "/Volumes/main/sales/staging/run1", false},
		{"/Volumes/main/sales/staging/run1", "/Volumes/main/sales/staging/run10", false},
		{"abfss://c@acct.dfs.core.windows.net/stage", "wasbs://c@acct.blob.core.windows.net/stage", false},
		{"mem://x/", "mem://x", true},
	} {
		if got := sameSource(c.a, c.b); got != c.same {
			t.Errorf("sameSource(%s, %s) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}
