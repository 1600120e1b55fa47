package azure_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/azure"
	"github.com/zbrecover/zbrecover/storage/azure/azuretest"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

// TestCopyObjectAcrossContainers: a copy from the table's container to a staging container
// of the same account is one Copy Blob request (and the properties of the new blob); when the
// service refuses it, the copy is streamed instead, and later copies from that container are
// streamed without trying again.
func TestCopyObjectAcrossContainers(t *testing.T) {
	srv := azuretest.NewServer(t)
	stage := srv.Container + "-stage"
	if _, err := srv.Client().CreateContainer(context.Background(), stage, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		storagetest.MustPut(t, srv.Put, fmt.Sprintf("t/_zerobus/f%d.parquet", i), bytes.Repeat([]byte{byte(i)}, 2048))
	}
	for _, env := range []string{azure.EnvAccountKey, azure.EnvAccount, azure.EnvSASToken} {
		t.Setenv(env, "")
	}
	t.Setenv(azure.EnvConnectionString, srv.ConnectionString())
	sharedKey := func(c *storage.Config) { c.Credentials = nil }
	wrap := func(b storage.Backend) storage.Backend {
		ab, _ := storage.WithAdaptive(b, storage.AdaptiveOptions{Max: 4})
		return storage.WithLimit(storage.WithRetry(ab, storage.RetryPolicy{}), 4)
	}
	src := wrap(open(t, srv, srv.URLFor("t/_zerobus"), sharedKey))
	dst := wrap(open(t, srv, "wasbs://"+stage+"@"+azuretest.Account+".blob.core.windows.net/run1", sharedKey))
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
	server := srv.Counts()
	if server.Gets != 0 || server.Puts != 1 {
		t.Errorf("a copy across containers made %s; want one Copy Blob and no read through the client", server)
	}
	srv.FailNext(storagetest.KindPut, http.StatusForbidden, 1)
	srv.ResetCounts()
	copyOne(listed[1])
	if c := srv.Counts(); c.Gets != 1 || c.Puts != 2 {
		t.Errorf("a refused copy made %s; want the refused Copy Blob, then a read and an upload", c)
	}
	srv.ResetCounts()
	copyOne(listed[2])
	if c := srv.Counts(); c.Gets != 1 || c.Puts != 1 {
		t.Errorf("after a refusal a copy made %s; want a read and an upload (no Copy Blob)", c)
	}
	for i, o := range listed {
		got, err := storage.ReadAll(ctx, dst, o.Key, 0, -1)
		if err != nil || !bytes.Equal(got, bytes.Repeat([]byte{byte(i)}, 2048)) {
			t.Errorf("%s: the copy reads %d bytes, %v", o.Key, len(got), err)
		}
	}
}
