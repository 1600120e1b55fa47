package s3test_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

// TestIfMatch checks the precondition gofakes3 lacks: a wrong If-Match is refused with 412
// and the object kept; the right one deletes.
func TestIfMatch(t *testing.T) {
	srv := s3test.NewServer(t)
	cli := srv.Client()
	ctx := context.Background()
	data := []byte("hello")
	if err := srv.Put("k", data); err != nil {
		t.Fatal(err)
	}
	_, err := cli.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("k"), IfMatch: aws.String(`"0000"`)})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "PreconditionFailed" {
		t.Fatalf("DeleteObject with a wrong If-Match: %v, want PreconditionFailed", err)
	}
	if _, err := cli.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("k")}); err != nil {
		t.Fatalf("object gone after a refused delete: %v", err)
	}
	if _, err := cli.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("k"), IfMatch: aws.String(s3test.ETagOf(data))}); err != nil {
		t.Fatalf("DeleteObject with the right If-Match: %v", err)
	}
	if _, err := cli.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("k")}); err == nil {
		t.Fatal("object still there after a conditional delete")
	}
	if c := srv.Counts(); c.Deletes != 2 || c.Heads != 2 {
		t.Errorf("counts %s, want 2 deletes and 2 heads", c)
	}
}

func TestLatency(t *testing.T) {
	srv := s3test.NewServer(t, s3test.WithLatency(30*time.Millisecond))
	if err := srv.Put("k", []byte("x")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := srv.Client().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("k")}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("request took %v with 30ms of injected latency", d)
	}
}

// TestCopyConditions checks the copy conditions gofakes3 ignores: a wrong
// x-amz-copy-source-if-match and If-None-Match: * on an existing destination are refused with
// 412, and nothing is written.
func TestCopyConditions(t *testing.T) {
	srv := s3test.NewServer(t)
	cli := srv.Client()
	ctx := context.Background()
	if err := srv.Put("src+1", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := srv.Put("dst", []byte("keep")); err != nil {
		t.Fatal(err)
	}
	src := aws.String(srv.Bucket + "/src%2B1")
	cases := map[string]*s3.CopyObjectInput{
		"wrong source ETag": {Bucket: aws.String(srv.Bucket), Key: aws.String("new"), CopySource: src, CopySourceIfMatch: aws.String(`"0000"`)},
		"existing target":   {Bucket: aws.String(srv.Bucket), Key: aws.String("dst"), CopySource: src, IfNoneMatch: aws.String("*")},
	}
	for name, in := range cases {
		_, err := cli.CopyObject(ctx, in)
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "PreconditionFailed" {
			t.Errorf("%s: %v, want PreconditionFailed", name, err)
		}
	}
	if _, err := cli.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("new")}); err == nil {
		t.Error("a refused copy wrote its destination")
	}
	in := &s3.CopyObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("new"), CopySource: src,
		CopySourceIfMatch: aws.String(s3test.ETagOf([]byte("hello"))), IfNoneMatch: aws.String("*")}
	if _, err := cli.CopyObject(ctx, in); err != nil {
		t.Fatalf("copy with conditions that hold: %v", err)
	}
	_, err := cli.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(srv.Bucket), Key: aws.String("new"),
		Body: strings.NewReader("x"), IfNoneMatch: aws.String("*")})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "PreconditionFailed" {
		t.Errorf("create-only PutObject over an object: %v, want PreconditionFailed", err)
	}
}
