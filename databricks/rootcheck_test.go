package databricks

import (
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
)

func TestCheckRootInside(t *testing.T) {
	cases := []struct {
		table, root string
		ok          bool
	}{
		{"s3://bucket/tables/orders", "s3://bucket/tables/orders", true},
		{"s3://bucket/tables/orders/", "s3://bucket/tables/orders/_zerobus", true},
		{"s3://bucket/tables/orders", "s3a://bucket/tables/orders/x", true},
		{"s3://bucket/tables/orders", "s3://bucket/tables/orders2", false},
		{"s3://bucket/tables/orders", "s3://bucket/tables", false},
		{"s3://bucket/tables/orders", "s3://other/tables/orders", false},
		{"s3://bucket/tables/orders", "s3://bucket/tables/orders/../customers", false},
		{"s3://bucket/tables/orders", "gs://bucket/tables/orders", false},
		{"abfss://c@acct.dfs.core.windows.net/t", "wasbs://c@acct.blob.core.windows.net/t/sub", true},
		{"abfss://c@acct.dfs.core.windows.net/t", "abfss://c@evil.dfs.core.windows.net/t", false},
		{"abfss://c@acct.dfs.core.windows.net/t", "abfss://d@acct.dfs.core.windows.net/t", false},
		{"abfss://c@acct.dfs.core.windows.net/t", "wasbs://c@acct.blob.core.chinacloudapi.cn/t", false},
		{"s3://bucket/t", "/tmp/t", false},
	}
	for _, c := range cases {
		root, err := storage.Parse(c.root)
		if err != nil {
			t.Fatalf("%s: %v", c.root, err)
		}
		err = CheckRootInside(c.table, root)
		if (err == nil) != c.ok {
			t.Errorf("CheckRootInside(%s, %s) = %v, want ok=%v", c.table, c.root, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "credentials vended for the table are only sent there") {
			t.Errorf("error %q does not say why", err)
		}
	}
}
