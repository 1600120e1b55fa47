package inspect_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/pqgen"
)

// A small zstd file holding one huge string is refused from its page headers before anything
// is decompressed when it decodes to more than the limit; under the limit, the value is cut
// to MaxCellBytes and marked with its length, in text and JSON alike.
func TestPreviewBoundedByDecodedBytes(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	big := strings.Repeat("é", 3<<20) // 6 MiB of UTF-8
	data := mustBytes(t, sc, `[{"s": "`+big+`"}]`, pqgen.Options{Compression: compress.Codecs.Zstd})
	if len(data) > 64<<10 {
		t.Fatalf("fixture is %d bytes, want a small compressed file", len(data))
	}
	s := newStore()
	s.put(prefix+"big.parquet", data, t0)
	ctx := context.Background()
	_, err := inspect.Preview(ctx, s, "big.parquet", inspect.PreviewOptions{MaxDecoded: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "over the preview limit") {
		t.Fatalf("err = %v, want the row group refused", err)
	}
	res, err := inspect.Preview(ctx, s, "big.parquet", inspect.PreviewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := res.Rows[0][0].(string)
	if len(v) > inspect.MaxCellBytes+64 || !strings.HasSuffix(v, "…[truncated: 6291456 bytes]") || !strings.HasPrefix(v, "éé") {
		t.Errorf("value of %d bytes ending %q", len(v), v[max(0, len(v)-40):])
	}
}
