// Package azure is the storage backend for Azure Blob Storage and ADLS Gen2 (abfss:// and
// wasbs:// URLs), over azblob. ADLS Gen2 accounts are reached through their Blob endpoint
// (multi-protocol access), so one code path serves both.
package azure

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/storage"
)

// MaxBatchDelete is the most sub-requests one blob batch takes.
const MaxBatchDelete = 256

// DefaultPageSize is the most blobs one list request returns.
const DefaultPageSize = 5000

// Environment variables read when cfg.Credentials is not set, in this order.
const (
	EnvConnectionString = "AZURE_STORAGE_CONNECTION_STRING"
	EnvAccountKey       = "AZURE_STORAGE_KEY"     // with AZURE_STORAGE_ACCOUNT or the URL's account
	EnvAccount          = "AZURE_STORAGE_ACCOUNT" // optional, for EnvAccountKey
	EnvSASToken         = "AZURE_STORAGE_SAS_TOKEN"
)

// EnvServiceEndpoint is the Azure CLI's variable for the Blob service endpoint (az storage
// --blob-endpoint): it stands for cfg.AzureEndpoint when that is not set.
const EnvServiceEndpoint = "AZURE_STORAGE_SERVICE_ENDPOINT"

// refreshBefore is how long before vended credentials expire that new ones are fetched.
const refreshBefore = 2 * time.Minute

// NewFactory returns the factory for the "az" scheme (abfss:// and wasbs:// URLs).
func NewFactory() storage.Factory { return storage.NewFactory("az", New) }

// Backend is a container and path on Azure Blob Storage.
type Backend struct {
	container string
	root      string // "" or a prefix ending in "/"
	pageSize  int32
	loc       string
	base      string // loc without path and query, for messages
	auth      string // how the backend authenticates, for messages (never the secret)
	kind      authKind
	account   string
	// sas holds the parameters of the SAS in use (the latest vended one), for messages about
	// its permissions and expiry; its signature is never printed.
	sas atomic.Pointer[url.Values]

	// Vended SAS tokens are short-lived: the container client is rebuilt around a fresh one
	// before the current one expires.
	mu      sync.Mutex
	cc      *container.Client
	expires time.Time
	refresh func(ctx context.Context) (*container.Client, time.Time, error)

	// copies names Azure in CopyFrom's errors and holds the source containers the service
	// refused a CopyFrom from (403).
	copies storage.CopyScope
}

var (
	_ storage.Backend      = (*Backend)(nil)
	_ storage.BatchDeleter = (*Backend)(nil)
	_ storage.Pager        = (*Backend)(nil)
	_ storage.Putter       = (*Backend)(nil)
	_ storage.Copier       = (*Backend)(nil)
	_ storage.CopierFrom   = (*Backend)(nil)
)

// copyPoll is how often Copy asks for the state of a copy that the service runs in the
// background.
const copyPoll = 200 * time.Millisecond

// CloudSuffixes are the Blob endpoint suffixes of Azure's public and sovereign clouds. A URL
// naming another host is refused unless an endpoint is configured explicitly (--azure-endpoint,
// AZURE_STORAGE_SERVICE_ENDPOINT or AZURE_STORAGE_CONNECTION_STRING), so that credentials never go to a host that merely
// looks like a storage account.
var CloudSuffixes = []string{
	"blob.core.windows.net",       // public
	"blob.core.chinacloudapi.cn",  // China (21Vianet)
	"blob.core.usgovcloudapi.net", // US Government
	"blob.core.cloudapi.de",       // Germany (retired, still resolvable for old accounts)
}

// CheckHost returns an error unless host is <account>.<one of CloudSuffixes>.
func CheckHost(host string) error {
	host = strings.ToLower(host)
	for _, s := range CloudSuffixes {
		if acct, ok := strings.CutSuffix(host, "."+s); ok && acct != "" && !strings.Contains(acct, ".") {
			return nil
		}
	}
	return fmt.Errorf("host %q is not an Azure Blob endpoint (<account>.%s, or a sovereign cloud's); "+
		"for another endpoint (Azure Stack, an emulator, a private endpoint) pass --azure-endpoint or set "+EnvServiceEndpoint, host, CloudSuffixes[0])
}

// registerEnvSecrets registers the storage secrets of the environment with the redactor.
func registerEnvSecrets() {
	redact.Register(os.Getenv(EnvAccountKey), os.Getenv(EnvSASToken))
	for _, part := range strings.Split(os.Getenv(EnvConnectionString), ";") {
		k, v, _ := strings.Cut(part, "=")
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "accountkey", "sharedaccesssignature":
			redact.Register(v)
		}
	}
}

// New opens a backend for loc.
//
// The service URL is cfg.AzureEndpoint (for Azurite, http://127.0.0.1:10000/devstoreaccount1/),
// else AZURE_STORAGE_SERVICE_ENDPOINT (as the Azure CLI reads it), else
// https://<account>.blob.<cloud suffix>/ from the URL. Credentials, first match wins:
// cfg.Credentials (a SAS token, refreshed before it expires); AZURE_STORAGE_CONNECTION_STRING
// (its endpoint wins over the URL's); AZURE_STORAGE_KEY with AZURE_STORAGE_ACCOUNT or the
// URL's account; AZURE_STORAGE_SAS_TOKEN; a SAS in the URL's query; else
// azidentity.DefaultAzureCredential (environment, workload identity, managed identity, Azure
// CLI).
func New(ctx context.Context, loc storage.Location, cfg storage.Config) (*Backend, error) {
	if loc.Scheme != "az" || loc.Bucket == "" {
		return nil, fmt.Errorf("azure backend: %s is not an abfss://container@account.dfs.core.windows.net/path location", loc)
	}
	serviceURL := cfg.AzureEndpoint
	if serviceURL == "" {
		serviceURL = strings.TrimSpace(os.Getenv(EnvServiceEndpoint))
	}
	if serviceURL == "" {
		if loc.BlobHost == "" {
			return nil, fmt.Errorf("azure backend: %s names no storage account host", loc)
		}
		// The URL's host is where the request, SAS included, goes: it must be Azure's (a
		// connection string names its own endpoint, unless vended credentials are used).
		if cfg.Credentials != nil || os.Getenv(EnvConnectionString) == "" {
			if err := CheckHost(loc.BlobHost); err != nil {
				return nil, fmt.Errorf("azure backend: %s: %w", loc, err)
			}
		}
		serviceURL = "https://" + loc.BlobHost + "/"
	}
	registerEnvSecrets()
	if !strings.HasSuffix(serviceURL, "/") {
		serviceURL += "/"
	}
	containerURL := serviceURL + url.PathEscape(loc.Bucket)

	opts := &container.ClientOptions{}
	if cfg.Transport != nil {
		opts.Transport = &http.Client{Transport: cfg.Transport}
	}
	switch {
	case cfg.MaxAttempts == 1:
		opts.Retry.MaxRetries = -1
	case cfg.MaxAttempts > 1:
		opts.Retry.MaxRetries = int32(cfg.MaxAttempts - 1)
	}
	if cfg.UserAgent != "" {
		opts.Telemetry.ApplicationID = cfg.UserAgent
	}

	base := loc
	base.Path, base.Query = "", nil
	b := &Backend{
		container: loc.Bucket,
		root:      loc.KeyPrefix(),
		pageSize:  DefaultPageSize,
		loc:       loc.String(),
		base:      strings.TrimSuffix(base.String(), "/"),
		copies:    storage.CopyScope{Store: "Azure", Bucket: "container", Elsewhere: "in another storage account"},
	}
	if cfg.PageSize > 0 {
		b.pageSize = int32(min(cfg.PageSize, DefaultPageSize))
	}
	withSAS := func(sas string) (*container.Client, error) {
		return container.NewClientWithNoCredential(containerURL+"?"+strings.TrimPrefix(sas, "?"), opts)
	}
	var err error
	account := loc.Account
	if a := os.Getenv(EnvAccount); a != "" {
		account = a
	}
	b.account = account
	switch {
	case cfg.Credentials != nil:
		b.auth, b.kind = "vended SAS token", authVended
		b.refresh = func(ctx context.Context) (*container.Client, time.Time, error) {
			c, err := cfg.Credentials(ctx)
			if err != nil {
				return nil, time.Time{}, fmt.Errorf("azure credentials: %w", err)
			}
			if c.AzureSASToken == "" {
				return nil, time.Time{}, errors.New("azure credentials: the credential provider returned no SAS token")
			}
			b.setSAS(c.AzureSASToken)
			cc, err := withSAS(c.AzureSASToken)
			return cc, c.Expires, err
		}
	case os.Getenv(EnvConnectionString) != "":
		b.auth, b.kind = EnvConnectionString, authKey
		if sas := connStringSAS(os.Getenv(EnvConnectionString)); sas != "" {
			b.kind = authSAS
			b.setSAS(sas)
		}
		b.cc, err = container.NewClientFromConnectionString(os.Getenv(EnvConnectionString), loc.Bucket, opts)
	case os.Getenv(EnvAccountKey) != "":
		b.auth, b.kind = EnvAccountKey, authKey
		var cred *container.SharedKeyCredential
		cred, err = container.NewSharedKeyCredential(account, os.Getenv(EnvAccountKey))
		if err == nil {
			b.cc, err = container.NewClientWithSharedKeyCredential(containerURL, cred, opts)
		}
	case os.Getenv(EnvSASToken) != "":
		b.auth, b.kind = EnvSASToken, authSAS
		b.setSAS(os.Getenv(EnvSASToken))
		b.cc, err = withSAS(os.Getenv(EnvSASToken))
	case loc.Query.Get("sig") != "":
		b.auth, b.kind = "SAS token in the URL", authSAS
		b.setSAS(loc.Query.Encode())
		b.cc, err = withSAS(loc.Query.Encode())
	default:
		b.auth, b.kind = "Azure default credential", authToken
		var cred *azidentity.DefaultAzureCredential
		cred, err = azidentity.NewDefaultAzureCredential(nil)
		if err == nil {
			b.cc, err = container.NewClient(containerURL, cred, opts)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("azure client (%s): %w", b.auth, storage.RedactError(err))
	}
	if b.refresh != nil {
		if _, err := b.client(ctx); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// client returns the container client, rebuilt around fresh vended credentials when the
// current ones are about to expire.
func (b *Backend) client(ctx context.Context) (*container.Client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refresh == nil || b.cc != nil && (b.expires.IsZero() || time.Until(b.expires) > refreshBefore) {
		return b.cc, nil
	}
	cc, exp, err := b.refresh(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.loc, storage.RedactError(err))
	}
	b.cc, b.expires = cc, exp
	return cc, nil
}

// Location implements storage.Backend.
func (b *Backend) Location() string { return b.loc }

func (b *Backend) url(key string) string {
	return b.base + "/" + b.root + key
}

func (b *Backend) blob(ctx context.Context, key string) (*blob.Client, error) {
	if err := storage.CheckKey(key, b.loc); err != nil {
		return nil, err
	}
	cc, err := b.client(ctx)
	if err != nil {
		return nil, err
	}
	return cc.NewBlobClient(b.root + key), nil
}

// List implements storage.Backend.
func (b *Backend) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	return storage.ListPages(ctx, b, prefix, fn)
}

// ListPage implements storage.Pager with one List Blobs request (at most 5000 blobs).
func (b *Backend) ListPage(ctx context.Context, prefix, token string) ([]storage.ObjectInfo, string, error) {
	cc, err := b.client(ctx)
	if err != nil {
		return nil, "", err
	}
	opts := &container.ListBlobsFlatOptions{
		Prefix:     to.Ptr(b.root + prefix),
		MaxResults: to.Ptr(b.pageSize),
		Include:    container.ListBlobsInclude{Metadata: true},
	}
	if token != "" {
		opts.Marker = to.Ptr(token)
	}
	resp, err := cc.NewListBlobsFlatPager(opts).NextPage(ctx)
	if err != nil {
		return nil, "", b.fail("list", prefix, err, false)
	}
	var items []*container.BlobItem
	if resp.Segment != nil {
		items = resp.Segment.BlobItems
	}
	page := make([]storage.ObjectInfo, 0, len(items))
	for _, it := range items {
		if it.Name == nil || it.Properties == nil {
			continue
		}
		size := deref(it.Properties.ContentLength, 0)
		key, ok := storage.ListedKey(b.root, *it.Name, size)
		if !ok || size == 0 && isFolder(it.Metadata) {
			continue
		}
		page = append(page, storage.ObjectInfo{
			Key:     key,
			Size:    size,
			ModTime: deref(it.Properties.LastModified, time.Time{}).UTC(),
			ETag:    etag(it.Properties.ETag),
		})
	}
	return page, deref(resp.NextMarker, ""), nil
}

// isFolder reports the directory placeholder blobs of hierarchical-namespace accounts.
func isFolder(md map[string]*string) bool {
	for k, v := range md {
		if strings.EqualFold(k, "hdi_isfolder") && v != nil && strings.EqualFold(*v, "true") {
			return true
		}
	}
	return false
}

func etag(e *azcore.ETag) string { return storage.QuoteETag(string(deref(e, ""))) }

// Stat implements storage.Backend.
func (b *Backend) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	bc, err := b.blob(ctx, key)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	p, err := bc.GetProperties(ctx, nil)
	if err != nil {
		return storage.ObjectInfo{}, b.fail("stat", key, err, false)
	}
	return storage.ObjectInfo{
		Key:     key,
		Size:    deref(p.ContentLength, 0),
		ModTime: deref(p.LastModified, time.Time{}).UTC(),
		ETag:    etag(p.ETag),
	}, nil
}

// ReadRange implements storage.Backend with one Get Blob request and an absolute range
// (Azure has no suffix ranges). n == 0 reads nothing and sends no request.
func (b *Backend) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	bc, err := b.blob(ctx, key)
	if err != nil {
		return nil, err
	}
	if off < 0 {
		return nil, fmt.Errorf("read %s: negative offset %d", b.url(key), off)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", b.url(key), err)
	}
	if n == 0 {
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	rng := blob.HTTPRange{Offset: off} // Count 0: to the end
	if n = storage.RangeLength(off, n); n > 0 {
		rng.Count = n
	}
	resp, err := bc.DownloadStream(ctx, &blob.DownloadStreamOptions{Range: rng})
	if err != nil {
		// 416: the blob exists and the range starts at or past its end (or it is empty).
		if bloberror.HasCode(err, bloberror.InvalidRange) || status(err) == http.StatusRequestedRangeNotSatisfiable {
			return io.NopCloser(bytes.NewReader(nil)), nil
		}
		return nil, b.fail("read", key, err, false)
	}
	return resp.Body, nil
}

func deleteOptions(cond storage.Precondition) *blob.DeleteOptions {
	o := &blob.DeleteOptions{}
	if cond.ETag != "" {
		o.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{
			IfMatch: to.Ptr(azcore.ETag(cond.ETag)),
		}}
	}
	return o
}

// Delete implements storage.Backend with If-Match on the ETag. A precondition without an ETag
// is compared with the blob's properties, and the delete then carries the ETag it saw.
func (b *Backend) Delete(ctx context.Context, key string, cond storage.Precondition) error {
	bc, err := b.blob(ctx, key)
	if err != nil {
		return err
	}
	if cond, err = storage.FillETag(ctx, b, key, b.url(key), cond); err != nil {
		return err
	}
	if _, err := bc.Delete(ctx, deleteOptions(cond)); err != nil {
		return b.deleteFailed(ctx, key, cond, err)
	}
	return nil
}

// deleteFailed translates a failed delete. Azure answers If-Match on a missing blob with 412,
// like a changed one; one more properties request tells "gone" from "changed".
func (b *Backend) deleteFailed(ctx context.Context, key string, cond storage.Precondition, err error) error {
	err = b.fail("delete", key, err, !cond.IsZero())
	switch {
	case cond.IsZero() && errors.Is(err, storage.ErrNotExist):
		return nil
	case errors.Is(err, storage.ErrPreconditionFailed):
		if _, serr := b.Stat(ctx, key); errors.Is(serr, storage.ErrNotExist) {
			return fmt.Errorf("delete %s: %w", b.url(key), storage.ErrNotExist)
		}
	}
	return err
}

// MaxBatchDelete implements storage.BatchDeleter.
func (b *Backend) MaxBatchDelete() int { return MaxBatchDelete }

// DeleteBatch implements storage.BatchDeleter with one blob batch request; each sub-request
// carries its own If-Match. Requests whose precondition has no ETag are deleted one by one.
func (b *Backend) DeleteBatch(ctx context.Context, reqs []storage.DeleteRequest) ([]storage.DeleteResult, error) {
	res, err := storage.BatchResults(ctx, b.loc, reqs, MaxBatchDelete)
	if err != nil || len(res) == 0 {
		return res, err
	}
	cc, err := b.client(ctx)
	if err != nil {
		return nil, err
	}
	bb, err := cc.NewBatchBuilder()
	if err != nil {
		return nil, fmt.Errorf("delete batch in %s: %w", b.loc, storage.RedactError(err))
	}
	var batched []int // request index of each sub-request
	for i, r := range reqs {
		if res[i].Err = storage.CheckKey(r.Key, b.loc); res[i].Err != nil {
			continue
		}
		if !r.Cond.IsZero() && r.Cond.ETag == "" {
			res[i].Err = b.Delete(ctx, r.Key, r.Cond)
			continue
		}
		if err := bb.Delete(b.root+r.Key, &container.BatchDeleteOptions{DeleteOptions: *deleteOptions(r.Cond)}); err != nil {
			res[i].Err = fmt.Errorf("delete %s: %w", b.url(r.Key), storage.RedactError(err))
			continue
		}
		batched = append(batched, i)
	}
	if len(batched) == 0 {
		return res, nil
	}
	resp, err := cc.SubmitBatch(ctx, bb, nil)
	if err != nil {
		switch status(err) {
		case http.StatusBadRequest, http.StatusForbidden, http.StatusNotImplemented:
			// The batch itself was refused (a SAS scoped to a directory does not authorize the
			// container-level batch request): delete one by one, which the same credentials
			// may allow.
			for _, i := range batched {
				res[i].Err = b.Delete(ctx, reqs[i].Key, reqs[i].Cond)
			}
			return res, nil
		}
		return nil, b.fail("delete batch", "", err, false)
	}
	done := make([]bool, len(batched))
	for _, item := range resp.Responses {
		if item == nil || item.ContentID == nil || *item.ContentID < 0 || *item.ContentID >= len(batched) {
			continue
		}
		j := *item.ContentID
		done[j] = true
		i := batched[j]
		if item.Error == nil {
			continue
		}
		res[i].Err = b.deleteFailed(ctx, reqs[i].Key, reqs[i].Cond, item.Error)
	}
	for j, ok := range done {
		if !ok {
			i := batched[j]
			res[i].Err = storage.Retryable(fmt.Errorf("delete %s: the batch response has no answer for this blob", b.url(reqs[i].Key)))
		}
	}
	return res, nil
}

func status(err error) int {
	return storage.HTTPStatus(err, func(re *azcore.ResponseError) int { return re.StatusCode })
}

// fail translates an SDK error with storage.RequestError: BlobNotFound, ConditionNotMet (or a
// 412 to a conditional request), and throttling, 5xx answers and dropped connections
// (transient). A missing container and refused credentials are permanent and named.
func (b *Backend) fail(op, key string, err error, conditional bool) error {
	return storage.RequestError(op, b.url(key), err, func(err error) (storage.ErrorClass, string) {
		st := status(err)
		switch {
		case bloberror.HasCode(err, bloberror.ContainerNotFound):
			return storage.ClassPermanent, fmt.Sprintf("container %q does not exist in account %q: check the "+
				"container and account in the URL (abfss://<container>@<account>.dfs.core.windows.net/<path>)", b.container, b.account)
		case bloberror.HasCode(err, bloberror.BlobNotFound) || st == http.StatusNotFound:
			return storage.ClassNotExist, ""
		case bloberror.HasCode(err, bloberror.ConditionNotMet) || st == http.StatusPreconditionFailed && conditional:
			return storage.ClassPreconditionFailed, ""
		case bloberror.HasCode(err, bloberror.AuthenticationFailed, bloberror.AuthorizationFailure,
			bloberror.AuthorizationPermissionMismatch, bloberror.AuthorizationResourceTypeMismatch) || st == http.StatusForbidden:
			return storage.ClassPermanent, b.refusedNote(op, err)
		case isNoCredential(err):
			return storage.ClassPermanent, noCredentialHint
		case bloberror.HasCode(err, bloberror.ServerBusy, bloberror.OperationTimedOut, bloberror.InternalError) ||
			storage.RetryableStatus(st) || storage.IsTransientNetwork(err):
			return storage.ClassTransient, ""
		}
		return storage.ClassPermanent, ""
	})
}

func deref[T any](p *T, zero T) T {
	if p == nil {
		return zero
	}
	return *p
}

// Put implements storage.Putter with blockblob UploadStream: one Put Blob request for a small
// object, staged blocks and one Put Block List beyond; the blob appears only when the last
// request commits it. CreateOnly sends If-None-Match: *, which Azure answers with 409
// BlobAlreadyExists or 412 ConditionNotMet when the blob exists (storage.ErrExist). Data that
// fails or is not the size announced is never committed.
func (b *Backend) Put(ctx context.Context, key string, r io.Reader, size int64, opts storage.PutOptions) (storage.ObjectInfo, error) {
	if err := storage.CheckKey(key, b.loc); err != nil {
		return storage.ObjectInfo{}, err
	}
	if size < 0 {
		return storage.ObjectInfo{}, fmt.Errorf("put %s: negative size %d", b.url(key), size)
	}
	cc, err := b.client(ctx)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	uo := &blockblob.UploadStreamOptions{
		BlockSize:   4 << 20,
		Concurrency: 1,
		HTTPHeaders: &blob.HTTPHeaders{BlobContentType: to.Ptr("application/octet-stream")},
	}
	if opts.CreateOnly {
		uo.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{
			IfNoneMatch: to.Ptr(azcore.ETagAny),
		}}
	}
	resp, err := cc.NewBlockBlobClient(b.root+key).UploadStream(ctx, storage.ExactReader(r, size), uo)
	if err != nil {
		return storage.ObjectInfo{}, b.writeFailed("put", key, err, opts)
	}
	o := storage.ObjectInfo{
		Key:     key,
		Size:    size,
		ModTime: deref(resp.LastModified, time.Time{}).UTC(),
		ETag:    etag(resp.ETag),
	}
	if len(resp.ContentMD5) == 16 {
		o.MD5 = hex.EncodeToString(resp.ContentMD5)
	}
	return o, nil
}

// writeFailed translates a failed write: an existing blob under a create-only write (409
// BlobAlreadyExists, or 412) is storage.ErrExist.
func (b *Backend) writeFailed(op, key string, err error, opts storage.PutOptions) error {
	if opts.CreateOnly && (bloberror.HasCode(err, bloberror.BlobAlreadyExists, bloberror.ConditionNotMet) ||
		status(err) == http.StatusPreconditionFailed || status(err) == http.StatusConflict) {
		return fmt.Errorf("%s %s: %w (%v)", op, b.url(key), storage.ErrExist, storage.RedactError(err))
	}
	return b.fail(op, key, err, opts.CreateOnly)
}

// Copy implements storage.Copier with Copy Blob (server-side, from the source's URL in the
// same account), waiting for a copy the service finishes in the background. The source's
// ETag is sent as x-ms-source-if-match (a precondition without an ETag is compared with the
// source's properties first, which give the ETag), and CreateOnly sends If-None-Match: *
// for the destination. Both failures are 412; one properties request of the source tells
// them apart.
func (b *Backend) Copy(ctx context.Context, srcKey, dstKey string, cond storage.Precondition, opts storage.PutOptions) (storage.ObjectInfo, error) {
	return b.copyFrom(ctx, b, srcKey, dstKey, cond, opts)
}

// CopyFrom implements storage.CopierFrom: Copy Blob, as Copy sends it, from src's container
// when src (under its decorators) is an Azure backend of the same storage account (the same
// service endpoint). The source's URL carries src's SAS when src authenticates with one;
// otherwise the service authorizes the read of the source with this backend's credentials.
// When it refuses (403), CopyFrom fails with storage.ErrNotSupported and sends no more copies
// from that container, so storage.CopyObject reads the blob with src's own credentials.
func (b *Backend) CopyFrom(ctx context.Context, src storage.Backend, srcKey, dstKey string, cond storage.Precondition, opts storage.PutOptions) (storage.ObjectInfo, error) {
	sb, err := storage.CopySource(&b.copies, src, srcKey, b, dstKey, func(b *Backend) (string, string, error) {
		cc, err := b.client(ctx)
		if err != nil {
			return "", "", err
		}
		return serviceOf(cc.URL()), b.container, nil
	})
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	return b.copyFrom(ctx, sb, srcKey, dstKey, cond, opts)
}

// serviceOf returns a container URL's service endpoint: scheme, host and any path before the
// container (Azurite's account), without the query.
func serviceOf(containerURL string) string {
	u, err := url.Parse(containerURL)
	if err != nil {
		return containerURL
	}
	u.RawQuery, u.Fragment = "", ""
	u.Path = path.Dir(strings.TrimSuffix(u.Path, "/"))
	u.RawPath = ""
	return strings.ToLower(u.Host) + u.Path
}

// copyFrom copies srcKey of sb (b itself, or another container of b's account) to dstKey of b.
func (b *Backend) copyFrom(ctx context.Context, sb *Backend, srcKey, dstKey string, cond storage.Precondition, opts storage.PutOptions) (storage.ObjectInfo, error) {
	src, err := sb.blob(ctx, srcKey)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	dst, err := b.blob(ctx, dstKey)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	where := sb.url(srcKey) + " to " + b.url(dstKey)
	if !cond.IsZero() && cond.ETag == "" {
		cur, err := sb.Stat(ctx, srcKey)
		if err != nil {
			return storage.ObjectInfo{}, fmt.Errorf("copy: %w", err)
		}
		if !cond.Matches(cur) {
			return storage.ObjectInfo{}, fmt.Errorf("copy %s: ETag %s, size %d: %w", where, cur.ETag, cur.Size, storage.ErrPreconditionFailed)
		}
		cond.ETag = cur.ETag
	}
	co := &blob.StartCopyFromURLOptions{}
	if cond.ETag != "" {
		co.SourceModifiedAccessConditions = &blob.SourceModifiedAccessConditions{SourceIfMatch: to.Ptr(azcore.ETag(cond.ETag))}
	}
	if opts.CreateOnly {
		co.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{
			IfNoneMatch: to.Ptr(azcore.ETagAny),
		}}
	}
	resp, err := dst.StartCopyFromURL(ctx, src.URL(), co)
	if err != nil {
		if sb != b && status(err) == http.StatusForbidden {
			return storage.ObjectInfo{}, b.copies.Refused(sb.container, where, b.fail("copy", dstKey, err, false))
		}
		return storage.ObjectInfo{}, sb.copyFailed(ctx, srcKey, where, cond, opts, err)
	}
	state := deref(resp.CopyStatus, blob.CopyStatusTypeSuccess)
	for state == blob.CopyStatusTypePending {
		t := time.NewTimer(copyPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			if resp.CopyID != nil {
				_, _ = dst.AbortCopyFromURL(context.WithoutCancel(ctx), *resp.CopyID, nil)
			}
			return storage.ObjectInfo{}, fmt.Errorf("copy %s: %w", where, ctx.Err())
		case <-t.C:
		}
		p, err := dst.GetProperties(ctx, nil)
		if err != nil {
			return storage.ObjectInfo{}, b.fail("copy", dstKey, err, false)
		}
		state = deref(p.CopyStatus, blob.CopyStatusTypeSuccess)
		if state != blob.CopyStatusTypePending && state != blob.CopyStatusTypeSuccess {
			return storage.ObjectInfo{}, fmt.Errorf("copy %s: the copy ended %s: %s", where, state, deref(p.CopyStatusDescription, ""))
		}
	}
	if state != blob.CopyStatusTypeSuccess {
		return storage.ObjectInfo{}, fmt.Errorf("copy %s: the copy ended %s", where, state)
	}
	o, err := b.Stat(ctx, dstKey)
	if err != nil {
		return storage.ObjectInfo{}, fmt.Errorf("copy %s: %w", where, err)
	}
	return o, nil
}

func (b *Backend) copyFailed(ctx context.Context, srcKey, where string, cond storage.Precondition, opts storage.PutOptions, err error) error {
	failed := b.fail("copy", srcKey, err, true)
	if !errors.Is(failed, storage.ErrPreconditionFailed) && !errors.Is(failed, storage.ErrNotExist) &&
		!(opts.CreateOnly && (bloberror.HasCode(err, bloberror.BlobAlreadyExists) || status(err) == http.StatusConflict)) {
		return failed
	}
	cur, serr := b.Stat(ctx, srcKey)
	switch {
	case errors.Is(serr, storage.ErrNotExist):
		return fmt.Errorf("copy %s: %w", where, storage.ErrNotExist)
	case serr != nil:
		return serr
	case cond.ETag != "" && cur.ETag != cond.ETag:
		return fmt.Errorf("copy %s: the source has ETag %s, not %s: %w", where, cur.ETag, cond.ETag, storage.ErrPreconditionFailed)
	case opts.CreateOnly:
		return fmt.Errorf("copy %s: %w", where, storage.ErrExist)
	}
	return failed
}
