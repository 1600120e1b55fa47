// Package s3 is the storage backend for Amazon S3 and S3-compatible stores (s3:// URLs), over
// aws-sdk-go-v2.
package s3

import (
	"log/slog"
	"strings"

	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/aws/smithy-go/logging"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/storage"
)

// MaxBatchDelete is the most keys one DeleteObjects request takes.
const MaxBatchDelete = 1000

// DefaultRegion is used when neither the configuration nor the bucket names a region.
const DefaultRegion = "us-east-1"

// NewFactory returns the factory for the "s3" scheme (s3:// and s3a:// URLs).
func NewFactory() storage.Factory { return storage.NewFactory("s3", New) }

// Backend is a bucket and prefix on S3.
type Backend struct {
	client   *s3.Client
	bucket   string
	root     string // "" or a prefix ending in "/"
	region   string
	pageSize int32
	loc      string
	// plainHTTP is set for an endpoint without TLS (an emulator).
	plainHTTP bool
	// endpointURL is the configured S3-compatible endpoint, "" for AWS.
	endpointURL string
	// endpointFrom is the environment variable or file that configured endpointURL, "" for
	// --s3-endpoint.
	endpointFrom string
	// vended is set when the credentials come from cfg.Credentials (Unity Catalog).
	vended bool
	// copies names S3 in CopyFrom's errors and holds the source buckets S3 refused a
	// CopyFrom from (403).
	copies storage.CopyScope
}

var (
	_ storage.Backend      = (*Backend)(nil)
	_ storage.BatchDeleter = (*Backend)(nil)
	_ storage.Pager        = (*Backend)(nil)
	_ storage.AfterLister  = (*Backend)(nil)
	_ storage.Putter       = (*Backend)(nil)
	_ storage.Copier       = (*Backend)(nil)
	_ storage.CopierFrom   = (*Backend)(nil)
)

// MaxPutSize is the largest object one PutObject or CopyObject request writes (5 GiB).
const MaxPutSize = 5 << 30

// New opens a backend for loc.
//
// Credentials come from cfg.Credentials (short-lived, refreshed before they expire) or else
// the SDK's default chain (environment, shared profile, SSO, instance role). The region is
// cfg.S3Region, else the bucket's region as S3 reports it (one HeadBucket request per bucket
// and endpoint in the life of the process), else the region of the environment or profile,
// else us-east-1.
//
// The endpoint is cfg.S3Endpoint (--s3-endpoint), else the one the AWS SDK and CLI configure:
// AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, or endpoint_url in the shared config file's profile
// (unless AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true). Any configured endpoint is addressed
// path-style (http://host/bucket/key), as the AWS CLI addresses a custom endpoint.
func New(ctx context.Context, loc storage.Location, cfg storage.Config) (*Backend, error) {
	if loc.Scheme != "s3" || loc.Bucket == "" {
		return nil, fmt.Errorf("s3 backend: %s is not an s3://bucket/prefix location", loc)
	}
	// The SDK reads these itself; the redactor must know them too.
	redact.Register(os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN"))
	opts := []func(*config.LoadOptions) error{config.WithLogger(sdkLogger(cfg.Logger))}
	if cfg.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(aws.NewCredentialsCache(credentialsProvider(cfg.Credentials),
			func(o *aws.CredentialsCacheOptions) { o.ExpiryWindow = time.Minute })))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("aws configuration: %w", storage.RedactError(err))
	}
	endpoint, endpointFrom := cfg.S3Endpoint, ""
	if endpoint == "" {
		endpoint, endpointFrom = ConfiguredEndpoint(awsCfg)
	}
	clientFor := func(region string) *s3.Client {
		return s3.NewFromConfig(awsCfg, func(o *s3.Options) {
			o.Region = region
			// Ranged reads carry no whole-object checksum; skipping validation is expected.
			o.DisableLogOutputChecksumValidationSkipped = true
			if endpoint != "" {
				o.BaseEndpoint = aws.String(endpoint)
				o.UsePathStyle = true
			}
			if cfg.Transport != nil {
				o.HTTPClient = &http.Client{Transport: cfg.Transport}
			}
			if cfg.MaxAttempts > 0 {
				o.RetryMaxAttempts = cfg.MaxAttempts
			}
			if cfg.UserAgent != "" {
				o.APIOptions = append(o.APIOptions, awsmiddleware.AddUserAgentKey(cfg.UserAgent))
			}
		})
	}
	region := cfg.S3Region
	if region == "" {
		probe := DefaultRegion
		if awsCfg.Region != "" {
			probe = awsCfg.Region
		}
		region = cachedRegion(endpoint, loc.Bucket, func() string { return BucketRegion(ctx, clientFor(probe), loc.Bucket) })
		if region == "" {
			region = probe
		}
	}
	b := &Backend{
		client: clientFor(region),
		bucket: loc.Bucket,
		region: region,
		root:   loc.KeyPrefix(),
		loc:    loc.String(),

		plainHTTP:    strings.HasPrefix(strings.ToLower(endpoint), "http://"),
		endpointURL:  redact.String(endpoint),
		endpointFrom: endpointFrom,
		vended:       cfg.Credentials != nil,
		copies:       storage.CopyScope{Store: "S3", Bucket: "bucket", Elsewhere: "on another endpoint"},
	}
	if cfg.PageSize > 0 {
		b.pageSize = int32(min(cfg.PageSize, 1000))
	}
	return b, nil
}

// credentialsProvider adapts a storage.CredentialProvider (vended credentials) to the SDK.
func credentialsProvider(p storage.CredentialProvider) aws.CredentialsProviderFunc {
	return func(ctx context.Context) (aws.Credentials, error) {
		c, err := p(ctx)
		if err != nil {
			return aws.Credentials{}, fmt.Errorf("s3 credentials: %w", err)
		}
		if c.AWSAccessKeyID == "" || c.AWSSecretAccessKey == "" {
			return aws.Credentials{}, errors.New("s3 credentials: the credential provider returned no AWS access key")
		}
		return aws.Credentials{
			AccessKeyID:     c.AWSAccessKeyID,
			SecretAccessKey: c.AWSSecretAccessKey,
			SessionToken:    c.AWSSessionToken,
			Source:          "zbrecover vended credentials",
			CanExpire:       !c.Expires.IsZero(),
			Expires:         c.Expires,
		}, nil
	}
}

// BucketRegion asks S3 for the bucket's region with one HeadBucket request; S3 names it in
// the x-amz-bucket-region header even when it refuses the request (301 or 403). It returns ""
// when the answer names no region.
func BucketRegion(ctx context.Context, client *s3.Client, bucket string) string {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}, func(o *s3.Options) {
		o.RetryMaxAttempts = 1
	})
	if err == nil {
		return aws.ToString(out.BucketRegion)
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.Header.Get("X-Amz-Bucket-Region")
	}
	return ""
}

// Region returns the region the backend's requests go to.
func (b *Backend) Region() string { return b.region }

// Location implements storage.Backend.
func (b *Backend) Location() string { return b.loc }

func (b *Backend) url(key string) string {
	return "s3://" + b.bucket + "/" + b.root + key
}

// key maps a backend key to the object key.
func (b *Backend) key(k string) (string, error) {
	if err := storage.CheckKey(k, b.loc); err != nil {
		return "", err
	}
	return b.root + k, nil
}

// List implements storage.Backend.
func (b *Backend) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	return storage.ListPages(ctx, b, prefix, fn)
}

// afterMark starts the tokens of AfterToken; S3 continuation tokens never hold a NUL byte.
const afterMark = "\x00start-after\x00"

// AfterToken implements storage.AfterLister: the token makes ListPage send StartAfter.
func (b *Backend) AfterToken(key string) string { return afterMark + key }

// ListPage implements storage.Pager with one ListObjectsV2 request.
func (b *Backend) ListPage(ctx context.Context, prefix, token string) ([]storage.ObjectInfo, string, error) {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(b.bucket), Prefix: aws.String(b.root + prefix)}
	if after, ok := strings.CutPrefix(token, afterMark); ok {
		in.StartAfter = aws.String(b.root + after)
	} else if token != "" {
		in.ContinuationToken = aws.String(token)
	}
	if b.pageSize > 0 {
		in.MaxKeys = aws.Int32(b.pageSize)
	}
	out, err := b.client.ListObjectsV2(ctx, in)
	if err != nil {
		return nil, "", b.fail("list", prefix, err)
	}
	page := make([]storage.ObjectInfo, 0, len(out.Contents))
	for _, o := range out.Contents {
		key, ok := storage.ListedKey(b.root, aws.ToString(o.Key), aws.ToInt64(o.Size))
		if !ok {
			continue
		}
		page = append(page, storage.ObjectInfo{
			Key:     key,
			Size:    aws.ToInt64(o.Size),
			ModTime: aws.ToTime(o.LastModified).UTC(),
			ETag:    storage.QuoteETag(aws.ToString(o.ETag)),
		})
	}
	next := ""
	if aws.ToBool(out.IsTruncated) {
		next = aws.ToString(out.NextContinuationToken)
		if next == "" {
			return nil, "", fmt.Errorf("list %s: truncated listing without a continuation token", b.url(prefix))
		}
	}
	return page, next, nil
}

// Stat implements storage.Backend. S3 answers HeadObject in a missing bucket with the same
// bodiless 404 as for a missing key, so Stat reports ErrNotExist there too; List, ReadRange
// and Delete name the missing bucket.
func (b *Backend) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	k, err := b.key(key)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(k)})
	if err != nil {
		return storage.ObjectInfo{}, b.fail("stat", key, err)
	}
	return storage.ObjectInfo{
		Key:     key,
		Size:    aws.ToInt64(out.ContentLength),
		ModTime: aws.ToTime(out.LastModified).UTC(),
		ETag:    storage.QuoteETag(aws.ToString(out.ETag)),
	}, nil
}

// ReadRange implements storage.Backend with one GetObject request and an absolute byte range
// (never a suffix range: S3-compatible stores disagree about those). n == 0 reads nothing and
// sends no request.
func (b *Backend) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	k, err := b.key(key)
	if err != nil {
		return nil, err
	}
	if off < 0 {
		return nil, fmt.Errorf("read %s: negative offset %d", b.url(key), off)
	}
	if n == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	rng := fmt.Sprintf("bytes=%d-", off)
	if n = storage.RangeLength(off, n); n > 0 {
		rng = fmt.Sprintf("bytes=%d-%d", off, off+n-1)
	}
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(k), Range: aws.String(rng)})
	if err != nil {
		// 416: the object exists and the range starts at or past its end (or it is empty).
		if statusOf(err) == http.StatusRequestedRangeNotSatisfiable {
			return io.NopCloser(bytes.NewReader(nil)), nil
		}
		return nil, b.fail("read", key, err)
	}
	return out.Body, nil
}

// Delete implements storage.Backend. A precondition is checked by S3 itself with If-Match on
// the ETag (conditional deletes); a precondition without an ETag is checked against a
// HeadObject first, and the delete then carries the ETag that HeadObject saw.
func (b *Backend) Delete(ctx context.Context, key string, cond storage.Precondition) error {
	k, err := b.key(key)
	if err != nil {
		return err
	}
	in := &s3.DeleteObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(k)}
	if !cond.IsZero() {
		if cond, err = storage.FillETag(ctx, b, key, b.url(key), cond); err != nil {
			return err
		}
		in.IfMatch = aws.String(cond.ETag)
	}
	if _, err := b.client.DeleteObject(ctx, in); err != nil {
		err = b.fail("delete", key, err)
		if cond.IsZero() && errors.Is(err, storage.ErrNotExist) {
			return nil
		}
		return err
	}
	return nil
}

// MaxBatchDelete implements storage.BatchDeleter.
func (b *Backend) MaxBatchDelete() int { return MaxBatchDelete }

// DeleteBatch implements storage.BatchDeleter with one DeleteObjects request carrying each
// object's ETag as its precondition. Requests whose precondition has no ETag are deleted one
// by one with Delete.
func (b *Backend) DeleteBatch(ctx context.Context, reqs []storage.DeleteRequest) ([]storage.DeleteResult, error) {
	res, err := storage.BatchResults(ctx, b.loc, reqs, MaxBatchDelete)
	if err != nil || len(res) == 0 {
		return res, err
	}
	var objs []types.ObjectIdentifier
	var batched []int
	for i, r := range reqs {
		k, err := b.key(r.Key)
		switch {
		case err != nil:
			res[i].Err = err
		case !r.Cond.IsZero() && r.Cond.ETag == "":
			res[i].Err = b.Delete(ctx, r.Key, r.Cond)
		default:
			id := types.ObjectIdentifier{Key: aws.String(k)}
			if r.Cond.ETag != "" {
				id.ETag = aws.String(r.Cond.ETag)
			}
			objs = append(objs, id)
			batched = append(batched, i)
		}
	}
	if len(objs) == 0 {
		return res, nil
	}
	out, err := b.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
		Bucket: aws.String(b.bucket),
		Delete: &types.Delete{Objects: objs, Quiet: aws.Bool(true)},
	})
	if err != nil {
		return nil, b.fail("delete batch", "", err)
	}
	failed := make(map[string]types.Error, len(out.Errors))
	for _, e := range out.Errors {
		failed[aws.ToString(e.Key)] = e
	}
	for _, i := range batched {
		e, ok := failed[b.root+reqs[i].Key]
		if !ok {
			continue
		}
		code := aws.ToString(e.Code)
		apiErr := fmt.Errorf("%s: %s", code, aws.ToString(e.Message))
		err := storage.RequestError("delete", b.url(reqs[i].Key), apiErr, func(err error) (storage.ErrorClass, string) {
			return b.classify("delete", code, 0, err)
		})
		if reqs[i].Cond.IsZero() && errors.Is(err, storage.ErrNotExist) {
			continue // already gone, as an unconditional Delete accepts
		}
		res[i].Err = err
	}
	return res, nil
}

// retryableCodes are S3 error codes for throttling and transient server trouble.
var retryableCodes = map[string]bool{
	"SlowDown": true, "Throttling": true, "ThrottlingException": true, "RequestLimitExceeded": true,
	"TooManyRequests": true, "RequestTimeout": true, "InternalError": true, "ServiceUnavailable": true,
}

func statusOf(err error) int {
	return storage.HTTPStatus(err, (*awshttp.ResponseError).HTTPStatusCode)
}

// fail translates an SDK error with storage.RequestError.
func (b *Backend) fail(op, key string, err error) error {
	return storage.RequestError(op, b.url(key), err, func(err error) (storage.ErrorClass, string) {
		code := ""
		var ae smithy.APIError
		if errors.As(err, &ae) {
			code = ae.ErrorCode()
		}
		return b.classify(op, code, statusOf(err), err)
	})
}

// classify sorts failed request op by its S3 error code and HTTP status: not found, a failed
// If-Match, and throttling, 5xx answers and dropped connections (transient). A missing bucket,
// refused credentials (an unknown access key, a wrong secret, an expired session) and a
// missing permission are permanent, each with a note that says what to check.
func (b *Backend) classify(op, code string, status int, err error) (storage.ErrorClass, string) {
	switch {
	case code == "NoSuchBucket":
		return storage.ClassPermanent, fmt.Sprintf("bucket %q does not exist", b.bucket)
	case code == "" && strings.Contains(err.Error(), "get credentials"):
		return storage.ClassPermanent, "no usable AWS credentials (set AWS_ACCESS_KEY_ID and " +
			"AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run where an instance role applies; or name the " +
			"table with --table to use the credentials Unity Catalog vends for it)"
	case (code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "ExpiredToken" ||
		code == "TokenRefreshRequired" || code == "InvalidToken") && b.vended:
		return storage.ClassPermanent, fmt.Sprintf("%s refused the temporary credentials Unity Catalog vended for "+
			"the table (%s); run again for fresh ones, check that the endpoint and region are the table's "+
			"(--s3-endpoint, --s3-region), or read with the environment's credentials (--storage-auth default)", b.endpoint(), code)
	case code == "InvalidAccessKeyId":
		return storage.ClassPermanent, fmt.Sprintf("the access key id is not valid: %s does not know it (%s); "+
			"check AWS_ACCESS_KEY_ID or the profile in use (AWS_PROFILE), and that the key was issued for this "+
			"endpoint and region (--s3-endpoint, --s3-region)", b.endpoint(), code)
	case code == "SignatureDoesNotMatch":
		return storage.ClassPermanent, fmt.Sprintf("the secret access key does not match the access key id (%s); "+
			"check AWS_SECRET_ACCESS_KEY or the profile in use (AWS_PROFILE)", code)
	case code == "ExpiredToken" || code == "TokenRefreshRequired":
		return storage.ClassPermanent, fmt.Sprintf("the session credentials have expired (%s); refresh them "+
			"(aws sso login, aws sts assume-role or a new AWS_SESSION_TOKEN) and run again", code)
	case code == "InvalidToken":
		return storage.ClassPermanent, fmt.Sprintf("the session token is not valid (%s); check AWS_SESSION_TOKEN, "+
			"which must come with the access key it was issued with", code)
	case code == "AccessDenied" || code == "AllAccessDisabled":
		return storage.ClassPermanent, "access denied: the credentials in use may not " + s3Permission(op) + " this prefix"
	case status == http.StatusForbidden:
		// HEAD answers carry no error code: a key S3 does not know looks like a missing
		// permission.
		return storage.ClassPermanent, "access denied (HTTP 403 without an error code): the credentials in use may not " +
			s3Permission(op) + " this prefix, or the access key itself is not valid for " + b.endpoint()
	case code == "NoSuchKey" || code == "NotFound" || status == http.StatusNotFound:
		return storage.ClassNotExist, ""
	case code == "PreconditionFailed" || status == http.StatusPreconditionFailed:
		return storage.ClassPreconditionFailed, ""
	case code == "ConditionalRequestConflict":
		// A conditional write raced another write of the key; S3 asks to try again.
		return storage.ClassTransient, ""
	case retryableCodes[code] || storage.RetryableStatus(status) || storage.IsTransientNetwork(err):
		return storage.ClassTransient, ""
	}
	return storage.ClassPermanent, ""
}

// s3Permission names what op needs, for the note of an access-denied answer.
func s3Permission(op string) string {
	switch op {
	case "list":
		return "list (s3:ListBucket)"
	case "stat", "read":
		return "read (s3:GetObject)"
	case "delete", "delete batch":
		return "delete (s3:DeleteObject)"
	case "put":
		return "write (s3:PutObject)"
	case "copy":
		return "copy (s3:GetObject on the source, s3:PutObject on the destination)"
	}
	return "list or read (s3:ListBucket, s3:GetObject)"
}

// ConfiguredEndpoint returns the S3 endpoint the AWS SDK's configuration sets, as the SDK
// resolves it (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, endpoint_url in the shared config file,
// all off under AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true), and what set it; "", "" when none
// does and requests go to AWS.
func ConfiguredEndpoint(awsCfg aws.Config) (endpoint, from string) {
	e := aws.ToString(s3.NewFromConfig(awsCfg).Options().BaseEndpoint)
	if e == "" {
		return "", ""
	}
	for _, name := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"} {
		if v := os.Getenv(name); v != "" && v == e {
			return e, name
		}
	}
	return e, "endpoint_url in the AWS config file"
}

// endpoint names where the backend's requests go, for messages.
func (b *Backend) endpoint() string {
	if b.endpointURL != "" && b.endpointFrom != "" {
		return b.endpointURL + " (from " + b.endpointFrom + ")"
	}
	if b.endpointURL != "" {
		return b.endpointURL
	}
	return "S3 (region " + b.region + ")"
}

// sdkLogger routes the AWS SDK's log lines (such as its instance-metadata fallback warnings) to
// l at debug level, redacted, instead of the process's stderr.
func sdkLogger(l *slog.Logger) logging.Logger {
	return logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		if l != nil {
			l.Debug(storage.Redact(fmt.Sprintf(format, v...)), "sdk", "aws", "level", string(c))
		}
	})
}

// Put implements storage.Putter with one PutObject request; CreateOnly sends If-None-Match: *,
// which S3 answers with 412 when the key exists (reported as storage.ErrExist). Objects
// larger than MaxPutSize (which would need a multipart upload) are refused. A reader that
// can seek (an io.ReadSeeker) lets the SDK sign the payload and repeat the request; any other
// reader is sent as it comes, which needs HTTPS for the SDK's streaming checksum.
func (b *Backend) Put(ctx context.Context, key string, r io.Reader, size int64, opts storage.PutOptions) (storage.ObjectInfo, error) {
	k, err := b.key(key)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	if size < 0 || size > MaxPutSize {
		return storage.ObjectInfo{}, fmt.Errorf("put %s: size %d is outside the 0 to %d bytes one request writes", b.url(key), size, int64(MaxPutSize))
	}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(b.bucket),
		Key:           aws.String(k),
		ContentLength: aws.Int64(size),
		ContentType:   aws.String("application/octet-stream"),
	}
	if opts.CreateOnly {
		in.IfNoneMatch = aws.String("*")
	}
	var optFns []func(*s3.Options)
	if rs, ok := r.(io.ReadSeeker); ok {
		if n, err := remaining(rs); err != nil || n != size {
			return storage.ObjectInfo{}, fmt.Errorf("put %s: the data holds %d bytes, not the %d announced (%v)", b.url(key), n, size, err)
		}
		in.Body = rs // the SDK rewinds it to retry and hashes it to sign
	} else {
		in.Body = storage.ExactReader(r, size)
		if b.plainHTTP {
			// Without TLS the SDK can neither hash a stream it cannot rewind nor send it with
			// a trailing checksum: send it unsigned, without a checksum (emulators only).
			optFns = append(optFns, func(o *s3.Options) {
				o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
				o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
			})
		}
	}
	out, err := b.client.PutObject(ctx, in, optFns...)
	if err != nil {
		return storage.ObjectInfo{}, b.writeFailed("put", key, err, opts)
	}
	return storage.ObjectInfo{Key: key, Size: size, ETag: storage.QuoteETag(aws.ToString(out.ETag))}, nil
}

// remaining returns the number of bytes from rs's position to its end, leaving the position
// where it was.
func remaining(rs io.ReadSeeker) (int64, error) {
	cur, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	end, err := rs.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, err
	}
	if _, err := rs.Seek(cur, io.SeekStart); err != nil {
		return 0, err
	}
	return end - cur, nil
}

// writeFailed translates a failed write. A 412 to a create-only write is storage.ErrExist.
func (b *Backend) writeFailed(op, key string, sdkErr error, opts storage.PutOptions) error {
	err := b.fail(op, key, sdkErr)
	if opts.CreateOnly && errors.Is(err, storage.ErrPreconditionFailed) {
		return fmt.Errorf("%s %s: %w: %w", op, b.url(key), storage.ErrExist, storage.RedactError(sdkErr))
	}
	return err
}

// Copy implements storage.Copier with one CopyObject request that carries the source's ETag
// as x-amz-copy-source-if-match, so the copy is of exactly the version that cond names, and
// If-None-Match: * for CreateOnly. When cond names no ETag or no size, a HeadObject of the
// source comes first (its size and ETag; cond is checked against them). S3 answers both
// failed conditions with 412; one more HeadObject of the source tells them apart. Sources
// larger than MaxPutSize fail with storage.ErrNotSupported (a multipart copy would be
// needed; storage.CopyObject then streams instead).
func (b *Backend) Copy(ctx context.Context, srcKey, dstKey string, cond storage.Precondition, opts storage.PutOptions) (storage.ObjectInfo, error) {
	return b.copyFrom(ctx, b, srcKey, dstKey, cond, opts)
}

// CopyFrom implements storage.CopierFrom: a CopyObject request, as Copy makes, from src's
// bucket and prefix when src (under its decorators) is an S3 backend on the same endpoint
// (the same S3-compatible store, or AWS in any region). The request is signed with this
// backend's credentials, which must be allowed to read src's object: when S3 refuses them
// (403), CopyFrom fails with storage.ErrNotSupported and sends no more copies from that
// bucket, so storage.CopyObject reads the object with src's own credentials instead.
func (b *Backend) CopyFrom(ctx context.Context, src storage.Backend, srcKey, dstKey string, cond storage.Precondition, opts storage.PutOptions) (storage.ObjectInfo, error) {
	sb, err := storage.CopySource(&b.copies, src, srcKey, b, dstKey, func(b *Backend) (string, string, error) {
		return b.endpointURL, b.bucket, nil
	})
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	return b.copyFrom(ctx, sb, srcKey, dstKey, cond, opts)
}

// copyFrom copies srcKey of sb (b itself, or another backend on b's endpoint) to dstKey of b.
func (b *Backend) copyFrom(ctx context.Context, sb *Backend, srcKey, dstKey string, cond storage.Precondition, opts storage.PutOptions) (storage.ObjectInfo, error) {
	sk, err := sb.key(srcKey)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	dk, err := b.key(dstKey)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	etag, size := cond.ETag, cond.Size
	if etag == "" || size == 0 {
		// The request needs the version to copy, and the answer names no size.
		src, err := sb.Stat(ctx, srcKey)
		if err != nil {
			return storage.ObjectInfo{}, fmt.Errorf("copy: %w", err)
		}
		if !cond.Matches(src) {
			return storage.ObjectInfo{}, fmt.Errorf("copy %s: ETag %s, size %d: %w", sb.url(srcKey), src.ETag, src.Size, storage.ErrPreconditionFailed)
		}
		etag, size = src.ETag, src.Size
	}
	if size > MaxPutSize {
		return storage.ObjectInfo{}, fmt.Errorf("copy %s: %d bytes, more than one CopyObject request copies: %w", sb.url(srcKey), size, storage.ErrNotSupported)
	}
	in := &s3.CopyObjectInput{
		Bucket:            aws.String(b.bucket),
		Key:               aws.String(dk),
		CopySource:        aws.String(copySource(sb.bucket, sk)),
		CopySourceIfMatch: aws.String(etag),
	}
	if opts.CreateOnly {
		in.IfNoneMatch = aws.String("*")
	}
	out, sdkErr := b.client.CopyObject(ctx, in)
	if sdkErr != nil {
		err = b.fail("copy", dstKey, sdkErr)
		if sb != b && statusOf(sdkErr) == http.StatusForbidden {
			return storage.ObjectInfo{}, b.copies.Refused(sb.bucket, sb.url(srcKey)+" to "+b.url(dstKey), err)
		}
		if !errors.Is(err, storage.ErrPreconditionFailed) {
			return storage.ObjectInfo{}, err
		}
		now, serr := sb.Stat(ctx, srcKey)
		switch {
		case errors.Is(serr, storage.ErrNotExist):
			return storage.ObjectInfo{}, fmt.Errorf("copy %s: the source went away: %w", sb.url(srcKey), storage.ErrNotExist)
		case serr == nil && now.ETag != etag:
			return storage.ObjectInfo{}, fmt.Errorf("copy %s: the source changed (ETag %s, was %s): %w", sb.url(srcKey), now.ETag, etag, storage.ErrPreconditionFailed)
		case opts.CreateOnly:
			return storage.ObjectInfo{}, fmt.Errorf("copy %s to %s: %w", sb.url(srcKey), b.url(dstKey), storage.ErrExist)
		}
		return storage.ObjectInfo{}, err
	}
	o := storage.ObjectInfo{Key: dstKey, Size: size}
	if res := out.CopyObjectResult; res != nil {
		o.ETag = storage.QuoteETag(aws.ToString(res.ETag))
		o.ModTime = aws.ToTime(res.LastModified).UTC()
	}
	return o, nil
}

// copySource is the x-amz-copy-source value: bucket/key with every byte of the key but
// unreserved characters and "/" percent-encoded, which S3 and S3-compatible stores decode
// alike ("+" stays a plus, "?" does not start a version id).
func copySource(bucket, key string) string {
	var sb strings.Builder
	sb.WriteString(bucket)
	sb.WriteByte('/')
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~', c == '/':
			sb.WriteByte(c)
		default:
			fmt.Fprintf(&sb, "%%%02X", c)
		}
	}
	return sb.String()
}
