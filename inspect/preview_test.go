package inspect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/pqgen"
)

func previewJSON(t *testing.T, res *inspect.PreviewResult) []map[string]json.RawMessage {
	t.Helper()
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rows []map[string]json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	return doc.Rows
}

func TestPreviewRendersValues(t *testing.T) {
	f := newFixture(t)
	res, err := inspect.Preview(context.Background(), f.store, "a.parquet", inspect.PreviewOptions{Rows: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.SchemaID != inspect.SchemaID(sparkA) || len(res.Rows) != 4 || len(res.Columns) != 11 {
		t.Fatalf("schema %s, %d rows, %d columns", res.SchemaID, len(res.Rows), len(res.Columns))
	}
	rows := previewJSON(t, res)
	want := []map[string]string{{
		"id":       `1`,
		"name":     `"alpha"`,
		"amount":   `12.3400`,
		"big":      `1234567890123456789012345678.0123456789`,
		"ts":       `"2024-05-01T12:00:00.000001Z"`,
		"local_ts": `"2024-05-01T12:00:00"`,
		"day":      `"2024-05-01"`,
		"attrs":    `{"a":7,"b":"x","inner":{"c":-1.50}}`,
		"tags":     `["red","blue"]`,
		"counts":   `{"k1":1,"k2":null}`,
		"items":    `[{"x":1,"y":[1.5,null]},{"x":2,"y":null}]`,
	}, {
		"id": `2`, "name": `null`, "amount": `null`, "ts": `null`, "attrs": `null`, "tags": `null`, "counts": `null`, "items": `null`,
	}, {
		"name":     `"<gamma & \"delta\">"`,
		"amount":   `0.0001`,
		"big":      `-0.0000000001`,
		"ts":       `"1999-12-31T23:59:59.999999Z"`,
		"local_ts": `"1999-12-31T23:59:59.5"`,
		"attrs":    `{"a":null,"b":"","inner":null}`,
		"tags":     `[]`,
		"counts":   `{}`,
		"items":    `[]`,
	}, {
		"amount": `-99999999999999.9999`,
		"big":    `0.0000000000`,
		"tags":   `[null]`,
		"attrs":  `{"a":1,"b":"tab\there","inner":{"c":null}}`,
	}}
	for i, w := range want {
		for col, v := range w {
			var compact bytes.Buffer
			json.Compact(&compact, rows[i][col])
			if compact.String() != v {
				t.Errorf("row %d %s = %s, want %s", i, col, compact.String(), v)
			}
		}
	}
	// Column order in the JSON rows follows the file.
	var buf bytes.Buffer
	res.WriteJSON(&buf)
	if i, j := strings.Index(buf.String(), `"local_ts": "2024`), strings.Index(buf.String(), `"day": "2024`); i < 0 || j < i {
		t.Errorf("columns out of order in JSON rows")
	}
}

func TestPreviewInt96UnsignedJSONEnumBinary(t *testing.T) {
	f := newFixture(t)
	res, err := inspect.Preview(context.Background(), f.store, prefix+"c.parquet", inspect.PreviewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows := previewJSON(t, res)
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	for col, v := range map[string]string{
		"ts":    `"2024-05-01T12:34:56.123456Z"`,
		"u8":    `255`,
		"u16":   `65535`,
		"u32":   `4294967295`,
		"u64":   `18446744073709551615`,
		"doc":   `"{\"a\":[1,2]}"`,
		"color": `"GREEN"`,
		"raw":   `"AAEC/w=="`,
	} {
		if got := string(rows[0][col]); got != v {
			t.Errorf("%s = %s, want %s", col, got, v)
		}
	}
	if got := string(rows[2]["ts"]); got != `"1970-01-01T00:00:00Z"` {
		t.Errorf("epoch ts = %s", got)
	}
}

func TestPreviewColumnsAndFormats(t *testing.T) {
	f := newFixture(t)
	all, err := inspect.Preview(context.Background(), f.store, "sub/2024/b.parquet", inspect.PreviewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := inspect.Preview(context.Background(), f.store, "sub/2024/b.parquet", inspect.PreviewOptions{Columns: []string{"amount", "ID"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Columns) != 2 || res.Columns[0].Name != "id" || res.Columns[1].Name != "amount" {
		t.Fatalf("columns %+v", res.Columns)
	}
	if res.Files[0].BytesRead >= all.Files[0].BytesRead {
		t.Errorf("a column subset read %d bytes, all columns %d", res.Files[0].BytesRead, all.Files[0].BytesRead)
	}
	var csvOut, table bytes.Buffer
	if err := res.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	if got, want := csvOut.String(), "id,amount\n10,5.5000\n11,\n"; got != want {
		t.Errorf("csv %q, want %q", got, want)
	}
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	want := "id      amount\n" +
		"bigint  decimal(18,4)\n" +
		"10      5.5000\n" +
		"11      NULL\n" +
		"(2 rows from sub/2024/b.parquet (2 of 2 rows))\n"
	if table.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", table.String(), want)
	}

	_, err = inspect.Preview(context.Background(), f.store, "a.parquet", inspect.PreviewOptions{Columns: []string{"nope"}})
	if err == nil || !strings.Contains(err.Error(), `no column "nope"`) || !strings.Contains(err.Error(), "local_ts") {
		t.Errorf("unknown column error: %v", err)
	}
}

func TestPreviewByteCap(t *testing.T) {
	f := newFixture(t)
	_, err := inspect.Preview(context.Background(), f.store, "a.parquet", inspect.PreviewOptions{MaxBytes: 100})
	if err == nil || !strings.Contains(err.Error(), "over the preview limit of 100 B") {
		t.Errorf("cap error: %v", err)
	}
	f.store.resetCounts()
	if _, err := inspect.Preview(context.Background(), f.store, "a.parquet", inspect.PreviewOptions{MaxBytes: 100}); err == nil {
		t.Fatal("no error")
	}
	if got := f.store.counts().ReadRanges; got != 1 {
		t.Errorf("a refused preview made %d reads, want 1 (the footer only)", got)
	}
}

func TestPreviewErrors(t *testing.T) {
	f := newFixture(t)
	if _, err := inspect.Preview(context.Background(), f.store, "bad.parquet", inspect.PreviewOptions{}); err == nil {
		t.Error("preview of a truncated file succeeded")
	}
	if _, err := inspect.Preview(context.Background(), f.store, "missing.parquet", inspect.PreviewOptions{}); err == nil {
		t.Error("preview of a missing file succeeded")
	}
	res, err := inspect.Preview(context.Background(), f.store, "empty.parquet", inspect.PreviewOptions{})
	if err != nil || len(res.Rows) != 0 || len(res.Columns) != 11 {
		t.Errorf("empty file: %v %+v", err, res)
	}
}

func TestPreviewGroup(t *testing.T) {
	f := newFixture(t)
	rep := run(t, f, inspect.Options{})
	id := inspect.SchemaID(sparkA)
	res, err := inspect.PreviewGroup(context.Background(), f.store, rep, id[:5], inspect.PreviewOptions{Rows: 6, Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	// a.parquet gives 5 rows, empty.parquet is skipped, sub/2024/b.parquet the 6th.
	var ids []string
	for _, r := range res.Rows {
		ids = append(ids, inspect.Text(r[0]))
	}
	if strings.Join(ids, ",") != "1,2,3,4,5,10" {
		t.Errorf("ids %v", ids)
	}
	if len(res.Files) != 2 || res.Files[0].Key != "a.parquet" || res.Files[1].Key != "sub/2024/b.parquet" || res.Files[1].Shown != 1 {
		t.Errorf("files %+v", res.Files)
	}
	if res.SchemaID != id {
		t.Errorf("schema id %s", res.SchemaID)
	}
	if _, err := inspect.PreviewGroup(context.Background(), f.store, rep, "zzz", inspect.PreviewOptions{}); err == nil || !strings.Contains(err.Error(), id) {
		t.Errorf("unknown group error: %v", err)
	}
}

// A column the group does not have is refused before any file is read, not once per file.
func TestPreviewGroupUnknownColumnReadsNothing(t *testing.T) {
	f := newFixture(t)
	rep := run(t, f, inspect.Options{})
	f.store.resetCounts()
	_, err := inspect.PreviewGroup(context.Background(), f.store, rep, inspect.SchemaID(sparkA), inspect.PreviewOptions{Columns: []string{"nope"}})
	if err == nil || !strings.Contains(err.Error(), `no column "nope"`) || !strings.Contains(err.Error(), "local_ts") {
		t.Errorf("unknown column error: %v", err)
	}
	if got := f.store.counts().ReadRanges; got != 0 {
		t.Errorf("an unknown column cost %d reads, want 0", got)
	}
}

// Spark timestamps hold microseconds: an INT96 value with nanoseconds (Impala, Hive) reads
// truncated to the microsecond, and the preview shows it so.
func TestPreviewInt96NanosShowMicroseconds(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}},
	}, nil)
	s := newStore()
	s.put(prefix+"t.parquet", mustBytes(t, sc, `[{"ts":"2024-05-01T12:34:56.123456789Z"},{"ts":"1969-12-31T23:59:59.999999999Z"}]`,
		pqgen.Options{Int96: true}), t0)
	res, err := inspect.Preview(context.Background(), s, "t.parquet", inspect.PreviewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Columns[0].Type != "timestamp" {
		t.Fatalf("type %s", res.Columns[0].Type)
	}
	for i, want := range []string{"2024-05-01T12:34:56.123456Z", "1969-12-31T23:59:59.999999Z"} {
		if got := inspect.Text(res.Rows[i][0]); got != want {
			t.Errorf("row %d: %s, want %s", i, got, want)
		}
	}
}

func TestPreviewTimestampNTZAndUTC(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "utc_ms", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "America/New_York"}},
		{Name: "ntz_us", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
	}, nil)
	s := newStore()
	s.put(prefix+"t.parquet", mustBytes(t, sc, `[{"utc_ms":"2024-03-10T01:30:00.250-05:00","ntz_us":"2024-03-10T01:30:00.000007"}]`, pqgen.Options{}), t0)
	res, err := inspect.Preview(context.Background(), s, "t.parquet", inspect.PreviewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := inspect.Text(res.Rows[0][0]); got != "2024-03-10T06:30:00.25Z" {
		t.Errorf("UTC-adjusted timestamp %s", got)
	}
	if got := inspect.Text(res.Rows[0][1]); got != "2024-03-10T01:30:00.000007" {
		t.Errorf("NTZ timestamp %s", got)
	}
}
