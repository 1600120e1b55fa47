package storage_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mock"
)

func TestRequestError(t *testing.T) {
	sdkErr := errors.New("GET https://acct.blob.core.windows.net/c/k?sv=1&sig=c2VjcmV0: 404 BlobNotFound")
	cases := []struct {
		class        storage.ErrorClass
		note         string
		want         error // sentinel the result wraps, or nil
		retryable    bool
		wantInString string
	}{
		{storage.ClassPermanent, "", nil, false, "stat az://c/k: GET https://"},
		{storage.ClassPermanent, `bucket "b" does not exist`, nil, false, `stat az://c/k: bucket "b" does not exist: GET`},
		{storage.ClassNotExist, "", storage.ErrNotExist, false, "stat az://c/k: object does not exist: GET"},
		{storage.ClassPreconditionFailed, "", storage.ErrPreconditionFailed, false, "stat az://c/k: object changed"},
		{storage.ClassTransient, "", nil, true, "stat az://c/k: GET"},
	}
	for _, c := range cases {
		err := storage.RequestError("stat", "az://c/k", sdkErr, func(error) (storage.ErrorClass, string) { return c.class, c.note })
		msg := err.Error()
		if !strings.HasPrefix(msg, c.wantInString) {
			t.Errorf("class %d: %q, want it to start with %q", c.class, msg, c.wantInString)
		}
		if strings.Contains(msg, "c2VjcmV0") || !strings.Contains(msg, "sig="+storage.Redacted) {
			t.Errorf("class %d: %q shows the signature", c.class, msg)
		}
		if c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("class %d: %v does not wrap %v", c.class, err, c.want)
		}
		if storage.IsRetryable(err) != c.retryable {
			t.Errorf("class %d: IsRetryable = %v", c.class, !c.retryable)
		}
		if !errors.Is(err, sdkErr) {
			t.Errorf("class %d: the SDK error is not in the chain of %v", c.class, err)
		}
	}
	// A context error is reported alone, without asking the backend.
	called := false
	err := storage.RequestError("read", "s3://b/k", fmt.Errorf("operation error: %w", context.Canceled),
		func(error) (storage.ErrorClass, string) { called = true; return storage.ClassTransient, "" })
	if called || !errors.Is(err, context.Canceled) || err.Error() != "read s3://b/k: context canceled" || storage.IsRetryable(err) {
		t.Errorf("RequestError(context canceled) = %v (classify called: %v)", err, called)
	}
}

func TestCheckKey(t *testing.T) {
	for key, valid := range map[string]bool{"a": true, "a/b c": true, "": false, "/a": false} {
		if err := storage.CheckKey(key, "s3://b/p"); (err == nil) != valid {
			t.Errorf("CheckKey(%q) = %v", key, err)
		} else if err != nil && !strings.Contains(err.Error(), "s3://b/p") {
			t.Errorf("CheckKey(%q) = %v, want the location named", key, err)
		}
	}
}

func TestListedKey(t *testing.T) {
	cases := []struct {
		root, name string
		size       int64
		key        string
		ok         bool
	}{
		{"p/", "p/a", 1, "a", true},
		{"p/", "p/d/a", 0, "d/a", true},
		{"", "a", 1, "a", true},
		{"p/", "q/a", 1, "", false},   // outside the root
		{"p/", "p/", 0, "", false},    // the root itself
		{"p/", "p/d/", 0, "", false},  // a folder marker
		{"p/", "p/d/", 5, "d/", true}, // a name ending in "/" that holds data
	}
	for _, c := range cases {
		if key, ok := storage.ListedKey(c.root, c.name, c.size); key != c.key || ok != c.ok {
			t.Errorf("ListedKey(%q, %q, %d) = %q, %v; want %q, %v", c.root, c.name, c.size, key, ok, c.key, c.ok)
		}
	}
}

func TestQuoteETag(t *testing.T) {
	for in, want := range map[string]string{"": "", "abc": `"abc"`, `"abc"`: `"abc"`, `W/"abc"`: `W/"abc"`} {
		if got := storage.QuoteETag(in); got != want {
			t.Errorf("QuoteETag(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestFillETag(t *testing.T) {
	stats := 0
	m := &mock.Backend{StatFn: func(_ context.Context, key string) (storage.ObjectInfo, error) {
		stats++
		if key == "gone" {
			return storage.ObjectInfo{}, fmt.Errorf("stat %s: %w", key, storage.ErrNotExist)
		}
		return storage.ObjectInfo{Key: key, Size: 10, ETag: `"now"`}, nil
	}}
	ctx := context.Background()
	for _, cond := range []storage.Precondition{{}, {ETag: `"e"`, Size: 3}} {
		if got, err := storage.FillETag(ctx, m, "k", "s3://b/k", cond); err != nil || got != cond {
			t.Errorf("FillETag(%+v) = %+v, %v; want it unchanged", cond, got, err)
		}
	}
	if stats != 0 {
		t.Errorf("%d Stat requests for preconditions that need none", stats)
	}
	if got, err := storage.FillETag(ctx, m, "k", "s3://b/k", storage.Precondition{Size: 10}); err != nil || got.ETag != `"now"` || got.Size != 10 {
		t.Errorf("FillETag(size 10) = %+v, %v; want the current ETag added", got, err)
	}
	if _, err := storage.FillETag(ctx, m, "k", "s3://b/k", storage.Precondition{Size: 11}); !errors.Is(err, storage.ErrPreconditionFailed) ||
		!strings.Contains(err.Error(), "s3://b/k") {
		t.Errorf("FillETag(size 11) = %v; want ErrPreconditionFailed naming the object", err)
	}
	if _, err := storage.FillETag(ctx, m, "gone", "s3://b/gone", storage.Precondition{Size: 10}); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("FillETag of a missing object = %v; want ErrNotExist", err)
	}
}

func TestNewFactory(t *testing.T) {
	fail := errors.New("cannot open")
	f := storage.NewFactory("x", func(context.Context, storage.Location, storage.Config) (*mock.Backend, error) {
		return nil, fail
	})
	if f.Scheme() != "x" {
		t.Errorf("Scheme() = %q", f.Scheme())
	}
	b, err := f.Open(context.Background(), storage.Location{Scheme: "x"}, storage.Config{})
	if b != nil || !errors.Is(err, fail) {
		t.Errorf("Open = %v, %v; want a nil Backend and the error", b, err)
	}
}

func TestKeyPrefix(t *testing.T) {
	for raw, want := range map[string]string{"s3://b": "", "s3://b/": "", "s3://b/p/q/": "p/q/", "gs://b/p": "p/"} {
		loc, err := storage.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := loc.KeyPrefix(); got != want {
			t.Errorf("Parse(%q).KeyPrefix() = %q, want %q", raw, got, want)
		}
	}
}
