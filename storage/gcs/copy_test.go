package gcs_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/gcs/gcstest"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

// TestCopyObjectAcrossBuckets: a copy from the table's bucket to a staging bucket on the
// same endpoint is one rewrite request, with the generation from the listing; when GCS
// refuses the destination's credentials the read of the source, the copy is streamed instead,
// and later copies from that bucket are streamed without trying again.
func TestCopyObjectAcrossBuckets(t *testing.T) {
	srv := gcstest.NewServer(t)
	srv.CreateBucket("zbrecover-stage")
	for i := 0; i < 3; i++ {
		storagetest.MustPut(t, srv.Put, fmt.Sprintf("t/_zerobus/f%d.parquet", i), bytes.Repeat([]byte{byte(i)}, 2048))
	}
	wrap := func(b storage.Backend) storage.Backend {
		ab, _ := storage.WithAdaptive(b, storage.AdaptiveOptions{Max: 4})
		return storage.WithLimit(storage.WithRetry(ab, storage.RetryPolicy{}), 4)
	}
	src := wrap(open(t, srv, srv.URLFor("t/_zerobus"), nil))
	dst := wrap(open(t, srv, "gs://zbrecover-stage/run1", nil))
	ctx := context.Background()
	var listed []storage.ObjectInfo
	if err := src.List(ctx, "", func(o storage.ObjectInfo) error { listed = append(listed, o); return nil }); err != nil {
		t.Fatal(err)
	}
	copyOne := func(o storage.ObjectInfo) {
		t.Helper()
		out, err := storage.CopyObject(ctx, src, o.Key, dst, o.Key, o.Version(), storage.PutOptions{CreateOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if out.Size != o.Size {
			t.Errorf("%s: copy of %d bytes, the source has %d", o.Key, out.Size, o.Size)
		}
	}
	srv.ResetCounts()
	copyOne(listed[0])
	if c := srv.Counts(); c.Other != 1 || c.Gets != 0 || c.Heads != 0 || c.Puts != 0 {
		t.Errorf("a copy across buckets made %s; want one rewrite", c)
	}
	srv.FailNext(storagetest.KindOther, http.StatusForbidden, 1)
	srv.ResetCounts()
	copyOne(listed[1])
	if c := srv.Counts(); c.Other != 1 || c.Gets != 1 || c.Heads != 1 || c.Puts != 1 {
		t.Errorf("a refused copy made %s; want the refused rewrite, then GET, metadata and upload", c)
	}
	srv.ResetCounts()
	copyOne(listed[2])
	if c := srv.Counts(); c.Other != 0 || c.Gets != 1 || c.Heads != 1 || c.Puts != 1 {
		t.Errorf("after a refusal a copy made %s; want GET, metadata and upload (no rewrite)", c)
	}
	for i, o := range listed {
		got, err := storage.ReadAll(ctx, dst, o.Key, 0, -1)
		if err != nil || !bytes.Equal(got, bytes.Repeat([]byte{byte(i)}, 2048)) {
			t.Errorf("%s: the copy reads %d bytes, %v", o.Key, len(got), err)
		}
	}
}
