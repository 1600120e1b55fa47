package storage_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
)

func TestParse(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		raw  string
		want storage.Location
		str  string // Location.String()
	}{
		{"s3://bucket/a/b/", storage.Location{Scheme: "s3", Bucket: "bucket", Path: "a/b", Original: "s3"}, "s3://bucket/a/b"},
		{"s3://bucket", storage.Location{Scheme: "s3", Bucket: "bucket", Original: "s3"}, "s3://bucket/"},
		{"S3://bucket/x", storage.Location{Scheme: "s3", Bucket: "bucket", Path: "x", Original: "s3"}, "s3://bucket/x"},
		{"s3a://bucket/t/_zerobus", storage.Location{Scheme: "s3", Bucket: "bucket", Path: "t/_zerobus", Original: "s3a"}, "s3://bucket/t/_zerobus"},
		{"gs://bkt/tables/t1", storage.Location{Scheme: "gs", Bucket: "bkt", Path: "tables/t1", Original: "gs"}, "gs://bkt/tables/t1"},
		{
			"abfss://cont@acct.dfs.core.windows.net/tables/t",
			storage.Location{Scheme: "az", Bucket: "cont", Account: "acct", BlobHost: "acct.blob.core.windows.net", Path: "tables/t", Original: "abfss"},
			"abfss://cont@acct.dfs.core.windows.net/tables/t",
		},
		{
			// Sovereign cloud: the dfs host maps to its blob twin under the same suffix.
			"abfss://cont@acct.dfs.core.chinacloudapi.cn/t",
			storage.Location{Scheme: "az", Bucket: "cont", Account: "acct", BlobHost: "acct.blob.core.chinacloudapi.cn", Path: "t", Original: "abfss"},
			"abfss://cont@acct.dfs.core.chinacloudapi.cn/t",
		},
		{
			"abfs://cont@ACCT.dfs.core.usgovcloudapi.net/t",
			storage.Location{Scheme: "az", Bucket: "cont", Account: "acct", BlobHost: "acct.blob.core.usgovcloudapi.net", Path: "t", Original: "abfss"},
			"abfss://cont@acct.dfs.core.usgovcloudapi.net/t",
		},
		{
			"wasbs://cont@acct.blob.core.windows.net/x/y",
			storage.Location{Scheme: "az", Bucket: "cont", Account: "acct", BlobHost: "acct.blob.core.windows.net", Path: "x/y", Original: "wasbs"},
			"wasbs://cont@acct.blob.core.windows.net/x/y",
		},
		{"file:///tmp/zb/root/", storage.Location{Scheme: "file", Path: "/tmp/zb/root", Original: "file"}, "file:///tmp/zb/root"},
		{"file://localhost/tmp/x", storage.Location{Scheme: "file", Path: "/tmp/x", Original: "file"}, "file:///tmp/x"},
		{"/abs/dir", storage.Location{Scheme: "file", Path: "/abs/dir"}, "file:///abs/dir"},
		{"rel/dir", storage.Location{Scheme: "file", Path: filepath.Join(cwd, "rel/dir")}, "file://" + filepath.ToSlash(filepath.Join(cwd, "rel/dir"))},
		{"./with:colon", storage.Location{Scheme: "file", Path: filepath.Join(cwd, "with:colon")}, "file://" + filepath.ToSlash(filepath.Join(cwd, "with:colon"))},
		// Encoded "#" and "?" are part of the path.
		{"s3://bucket/t%232/q%3F", storage.Location{Scheme: "s3", Bucket: "bucket", Path: "t#2/q?", Original: "s3"}, "s3://bucket/t#2/q?"},
		{"file:/tmp/short/form", storage.Location{Scheme: "file", Path: "/tmp/short/form", Original: "file"}, "file:///tmp/short/form"},
		// Empty and "." elements are dropped, as the warehouse's paths drop them.
		{"s3://bucket//a/./b//", storage.Location{Scheme: "s3", Bucket: "bucket", Path: "a/b", Original: "s3"}, "s3://bucket/a/b"},
		// Unity Catalog volume paths: the names in lower case (identifiers are
		// case-insensitive), the folder inside as written.
		{"/Volumes/Main/Sales/STAGING/Run1/", storage.Location{Scheme: "volume", Catalog: "main", Schema: "sales", Volume: "staging", Path: "Run1"},
			"/Volumes/main/sales/staging/Run1"},
		{"/Volumes/main/sales/staging", storage.Location{Scheme: "volume", Catalog: "main", Schema: "sales", Volume: "staging"}, "/Volumes/main/sales/staging"},
		{"dbfs:/Volumes/main/sales/staging//a/./b", storage.Location{Scheme: "volume", Catalog: "main", Schema: "sales", Volume: "staging", Path: "a/b", Original: "dbfs"},
			"/Volumes/main/sales/staging/a/b"},
		{"DBFS:///Volumes/main/sales/staging/x", storage.Location{Scheme: "volume", Catalog: "main", Schema: "sales", Volume: "staging", Path: "x", Original: "dbfs"},
			"/Volumes/main/sales/staging/x"},
		// A local folder under /Volumes (a macOS mount point) is a file:// URL.
		{"file:///Volumes/disk/x", storage.Location{Scheme: "file", Path: "/Volumes/disk/x", Original: "file"}, "file:///Volumes/disk/x"},
	}
	for _, c := range cases {
		got, err := storage.Parse(c.raw)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.raw, err)
			continue
		}
		if got.Scheme != c.want.Scheme || got.Bucket != c.want.Bucket || got.Account != c.want.Account ||
			got.BlobHost != c.want.BlobHost || got.Path != c.want.Path || got.Original != c.want.Original ||
			got.Catalog != c.want.Catalog || got.Schema != c.want.Schema || got.Volume != c.want.Volume {
			t.Errorf("Parse(%q) = %+v\nwant %+v", c.raw, got, c.want)
		}
		if s := got.String(); s != c.str {
			t.Errorf("Parse(%q).String() = %q, want %q", c.raw, s, c.str)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		raw      string
		contains []string
	}{
		{"", []string{"empty storage location", "s3://bucket/prefix"}},
		{"ftp://host/dir", []string{`unknown scheme "ftp"`, "s3://", "gs://", "abfss://", "wasbs://", "file://"}},
		{"hdfs:/data", []string{`unknown scheme "hdfs"`, "file://"}},
		{"s3://", []string{"has no bucket"}},
		{"gs:///path", []string{"has no bucket", "gs://bucket/prefix"}},
		{"abfss://acct.dfs.core.windows.net/p", []string{"has no container", "abfss://container@account.dfs.core.windows.net/path"}},
		{"wasbs://c@localhost/p", []string{"host must be"}},
		{"abfss://c@acct.file.core.windows.net/p", []string{"host must be"}},
		{"file://server/share", []string{"has a host"}},
		{"s3://AKIA123:verysecretkey@bucket/p", []string{"carries credentials"}},
		{"abfss://c:hunter2pass@acct.dfs.core.windows.net/p", []string{"carries a password"}},
		// "#" and "?" would cut the prefix short: s3://b/t#2 must not list all of s3://b/t...
		{"s3://bucket/tables/t#2", []string{`holds a "#"`, "%23"}},
		{"gs://bucket/dir?x=1", []string{`holds a "?"`, "%3F"}},
		{"s3://bucket/dir?", []string{`holds a "?"`}},
		{"file:///tmp/a?b", []string{`holds a "?"`}},
		{"abfss://c@acct.dfs.core.windows.net/p#frag", []string{`holds a "#"`}},
		// A known scheme without "//" is not an unknown scheme.
		{"s3:/bucket/x", []string{`"s3:" must be followed by "//"`, "s3://bucket/prefix"}},
		{"GS:bucket", []string{`"GS:" must be followed by "//"`}},
		// A /Volumes path names a volume; a local folder there is file:///Volumes/….
		{"/Volumes", []string{"names no volume", "/Volumes/<catalog>/<schema>/<volume>/<dir>", "file:///Volumes/"}},
		{"/Volumes/main/sales", []string{"names no volume"}},
		{"/Volumes/main//sales/", []string{"names no volume"}},
		{"/Volumes/main/sales/staging/../other", []string{`".." element`}},
		{"dbfs:/Volumes/main", []string{"names no volume"}},
		{"dbfs:/tmp/x", []string{"only Unity Catalog volume paths", "dbfs:/Volumes/"}},
	}
	for _, c := range cases {
		_, err := storage.Parse(c.raw)
		if err == nil {
			t.Errorf("Parse(%q) succeeded", c.raw)
			continue
		}
		for _, s := range c.contains {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("Parse(%q) error %q does not mention %q", c.raw, err, s)
			}
		}
		for _, secret := range []string{"verysecretkey", "hunter2pass"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("Parse(%q) error %q shows a secret", c.raw, err)
			}
		}
	}
}

func TestLocationRedactsSAS(t *testing.T) {
	raw := "wasbs://cont@acct.blob.core.windows.net/t?sv=2024-05-04&se=2030-01-01T00%3A00%3A00Z&sr=c&sp=rld&sig=c2VjcmV0K3NpZw%3D%3D"
	loc, err := storage.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if loc.Query.Get("sig") != "c2VjcmV0K3NpZw==" {
		t.Errorf("Query sig = %q, the backend needs the real token", loc.Query.Get("sig"))
	}
	s := loc.String()
	if strings.Contains(s, "c2VjcmV0") || !strings.Contains(s, "sig="+storage.Redacted) {
		t.Errorf("String() = %q, want the signature redacted", s)
	}
	if !strings.Contains(s, "sv=2024-05-04") || !strings.Contains(s, "wasbs://cont@acct.blob.core.windows.net/t?") {
		t.Errorf("String() = %q, want the rest of the URL kept", s)
	}
	if j := loc.Join("sub/dir").String(); strings.Contains(j, "c2VjcmV0") || !strings.Contains(j, "/t/sub/dir?") {
		t.Errorf("Join().String() = %q", j)
	}
	// A bad URL carrying a SAS: the error shows no signature either.
	_, err = storage.Parse("wasbs://c@nohost/p?sig=c2VjcmV0&sv=1")
	if err == nil || strings.Contains(err.Error(), "c2VjcmV0") {
		t.Errorf("Parse error %v shows the signature", err)
	}
}

func TestRedact(t *testing.T) {
	cases := []struct{ in, want string }{
		{"https://a.blob.core.windows.net/c/b?sv=2024&sig=abc%2Bdef&se=x", "https://a.blob.core.windows.net/c/b?sv=2024&sig=REDACTED&se=x"},
		{"GET https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIA%2F&X-Amz-Signature=f00d&X-Amz-Security-Token=tok",
			"GET https://b.s3.amazonaws.com/k?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&X-Amz-Security-Token=REDACTED"},
		{"token was Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig", "token was Bearer REDACTED"},
		{"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig", "Authorization: REDACTED"},
		{"token dapi0123456789abcdef0123456789abcdef in text", "token REDACTED in text"},
		{"https://user:p4ssw0rd@host/path", "https://user:REDACTED@host/path"},
		{"DefaultEndpointsProtocol=https;AccountName=a;AccountKey=Eby8vd/M02+xN==;EndpointSuffix=core.windows.net",
			"DefaultEndpointsProtocol=https;AccountName=a;AccountKey=REDACTED;EndpointSuffix=core.windows.net"},
		{"SharedAccessSignature=sv=1&sig=zzz", "SharedAccessSignature=REDACTED&sig=REDACTED"},
		{"https://oauth2.googleapis.com/token?access_token=ya29.abc", "https://oauth2.googleapis.com/token?access_token=REDACTED"},
		{"s3://bucket/plain/path", "s3://bucket/plain/path"},
	}
	for _, c := range cases {
		if got := storage.Redact(c.in); got != c.want {
			t.Errorf("Redact(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestObjectURL(t *testing.T) {
	loc, _ := storage.Parse("wasbs://c@a.blob.core.windows.net/root?sig=s3cr3t&sv=1")
	b := &locOnly{loc.String()}
	if got := storage.ObjectURL(b, "dir/f.parquet"); got != "wasbs://c@a.blob.core.windows.net/root/dir/f.parquet?sig=REDACTED&sv=1" {
		t.Errorf("ObjectURL = %q", got)
	}
	if got := storage.ObjectURL(&locOnly{"s3://bucket/"}, "k"); got != "s3://bucket/k" {
		t.Errorf("ObjectURL = %q", got)
	}
}

type locOnly struct{ loc string }

func (l *locOnly) Location() string { return l.loc }
func (l *locOnly) List(context.Context, string, func(storage.ObjectInfo) error) error {
	return nil
}
func (l *locOnly) Stat(context.Context, string) (storage.ObjectInfo, error) {
	return storage.ObjectInfo{}, storage.ErrNotExist
}
func (l *locOnly) ReadRange(context.Context, string, int64, int64) (io.ReadCloser, error) {
	return nil, storage.ErrNotExist
}
func (l *locOnly) Delete(context.Context, string, storage.Precondition) error { return nil }

// TestParseSuggestsForHTTPSURLs: a storage service's https:// URL is refused with the form
// zbrecover reads, and never with its secret.
func TestParseSuggestsForHTTPSURLs(t *testing.T) {
	for raw, want := range map[string]string{
		"https://acct.blob.core.windows.net/c/x/y?sv=1&sig=c2lnbmF0dXJl": "did you mean abfss://c@acct.dfs.core.windows.net/x/y ?",
		"https://acct.dfs.core.windows.net/c/x":                          "did you mean abfss://c@acct.dfs.core.windows.net/x ?",
		"https://bkt.s3.eu-west-1.amazonaws.com/a/b":                     "did you mean s3://bkt/a/b ?",
		"https://storage.googleapis.com/b/p":                             "did you mean gs://b/p ?",
	} {
		_, err := storage.Parse(raw)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "c2lnbmF0dXJl") {
			t.Errorf("Parse(%q) = %v, want %q", raw, err, want)
		}
	}
}
