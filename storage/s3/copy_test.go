package s3_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

// decorated wraps b as the command line wraps an opened store: the adaptive limit under the
// retries under the --concurrency cap.
func decorated(b storage.Backend) storage.Backend {
	ab, _ := storage.WithAdaptive(b, storage.AdaptiveOptions{Max: 4})
	return storage.WithLimit(storage.WithRetry(ab, storage.RetryPolicy{}), 4)
}

// TestCopyObjectAcrossBuckets: a copy from the table's bucket to a staging bucket on the
// same endpoint is one CopyObject request, with the version from the listing and no HEAD or
// GET; when S3 refuses the destination's credentials the read of the source, the copy is
// streamed instead (a GET and a HEAD of the source, the listing giving the version), and later copies from that bucket are streamed without trying again.
func TestCopyObjectAcrossBuckets(t *testing.T) {
	srv := s3test.NewServer(t)
	if err := srv.CreateBucket("zbrecover-stage"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		storagetest.MustPut(t, srv.Put, fmt.Sprintf("t/_zerobus/f%d.parquet", i), bytes.Repeat([]byte{byte(i)}, 2048))
	}
	src := decorated(open(t, srv, srv.URLFor("t/_zerobus"), nil))
	dst := decorated(open(t, srv, "s3://zbrecover-stage/run1", nil))
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
	if c := srv.Counts(); c.Puts != 1 || c.Gets != 0 || c.Heads != 0 || c.Total() != 0 {
		t.Errorf("a copy across buckets made %s; want one CopyObject (a put on the wire)", c)
	}

	srv.FailNext(storagetest.KindPut, http.StatusForbidden, 1)
	srv.ResetCounts()
	copyOne(listed[1])
	if c := srv.Counts(); c.Puts != 2 || c.Gets != 1 || c.Heads != 1 {
		t.Errorf("a refused copy made %s; want the refused CopyObject, then GET, HEAD and PUT", c)
	}
	srv.ResetCounts()
	copyOne(listed[2])
	if c := srv.Counts(); c.Puts != 1 || c.Gets != 1 || c.Heads != 1 {
		t.Errorf("after a refusal a copy made %s; want GET, HEAD and PUT (no CopyObject)", c)
	}
	for i, o := range listed {
		got, err := storage.ReadAll(ctx, dst, o.Key, 0, -1)
		if err != nil || !bytes.Equal(got, bytes.Repeat([]byte{byte(i)}, 2048)) {
			t.Errorf("%s: the copy reads %d bytes, %v", o.Key, len(got), err)
		}
	}
}
