package databricks

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zbrecover/zbrecover/internal/redact"

	"github.com/databricks/databricks-sdk-go/service/catalog"
	"github.com/zbrecover/zbrecover/storage"
)

// Operation is what vended credentials allow on a table's storage.
type Operation string

const (
	// OperationRead allows listing and reading (inspect, preview, verify).
	OperationRead Operation = "READ"
	// OperationReadWrite also allows deleting (cleanup).
	OperationReadWrite Operation = "READ_WRITE"
)

// VendedCredentials are temporary storage credentials Unity Catalog issued for one table.
type VendedCredentials struct {
	storage.Credentials
	// URL is the storage path the credentials are valid for.
	URL string
}

const vendDeniedHint = "credential vending needs the EXTERNAL USE SCHEMA privilege on the table's schema " +
	"and External data access enabled on the metastore; otherwise use --storage-auth default with cloud credentials"

// TableCredentials asks Unity Catalog for temporary credentials to the table's storage
// (POST /api/2.0/unity-catalog/temporary-table-credentials). Exactly one store's fields are set
// in the result: AWS keys for s3, an OAuth token for gs, a SAS token for Azure. Credentials
// Unity Catalog vends in a form storage cannot use (an Azure AD token, Cloudflare R2 keys) are
// an error wrapping ErrUnsupported.
func (c *Client) TableCredentials(ctx context.Context, tableID string, op Operation) (VendedCredentials, error) {
	if tableID == "" {
		return VendedCredentials{}, fmt.Errorf("credential vending: %w: empty table id", ErrConfig)
	}
	if op != OperationRead && op != OperationReadWrite {
		return VendedCredentials{}, fmt.Errorf("credential vending: unknown operation %q (want READ or READ_WRITE)", op)
	}
	resp, err := c.creds.GenerateTemporaryTableCredentials(ctx, catalog.GenerateTemporaryTableCredentialRequest{
		TableId:   tableID,
		Operation: catalog.TableOperation(op),
	})
	opName := fmt.Sprintf("vend %s storage credentials (table id %s)", op, tableID)
	if err != nil {
		return VendedCredentials{}, classifyAPI(opName, c.cfg.Host, c.cfg.AuthType, err, apiHints{
			notFound: "the table id is unknown to Unity Catalog; look the table up again",
			denied:   vendDeniedHint,
			rejected: "Unity Catalog does not vend credentials for this table; " + vendDeniedHint,
		})
	}
	return vendedFrom(opName, resp)
}

func vendedFrom(op string, resp *catalog.GenerateTemporaryTableCredentialResponse) (VendedCredentials, error) {
	out := VendedCredentials{URL: resp.Url}
	if resp.ExpirationTime > 0 {
		out.Expires = time.UnixMilli(resp.ExpirationTime).UTC()
	}
	switch {
	case resp.AwsTempCredentials != nil:
		a := resp.AwsTempCredentials
		redact.Register(a.SecretAccessKey, a.SessionToken)
		if a.AccessKeyId == "" || a.SecretAccessKey == "" {
			return VendedCredentials{}, fmt.Errorf("%s: Unity Catalog returned incomplete AWS credentials", op)
		}
		out.AWSAccessKeyID, out.AWSSecretAccessKey, out.AWSSessionToken = a.AccessKeyId, a.SecretAccessKey, a.SessionToken
		if a.AccessPoint != "" {
			logger().Debug("vended AWS credentials are scoped to an S3 access point", "access_point", a.AccessPoint)
		}
	case resp.GcpOauthToken != nil:
		redact.Register(resp.GcpOauthToken.OauthToken)
		if resp.GcpOauthToken.OauthToken == "" {
			return VendedCredentials{}, fmt.Errorf("%s: Unity Catalog returned an empty GCP OAuth token", op)
		}
		out.GCSOAuthToken = resp.GcpOauthToken.OauthToken
	case resp.AzureUserDelegationSas != nil:
		redact.Register(resp.AzureUserDelegationSas.SasToken)
		if resp.AzureUserDelegationSas.SasToken == "" {
			return VendedCredentials{}, fmt.Errorf("%s: Unity Catalog returned an empty Azure SAS token", op)
		}
		out.AzureSASToken = resp.AzureUserDelegationSas.SasToken
	case resp.AzureAad != nil:
		redact.Register(resp.AzureAad.AadToken)
		return VendedCredentials{}, fmt.Errorf("%s: %w: Unity Catalog vended an Azure AD token, and zbrecover's Azure backend takes a SAS token; use --storage-auth default with Azure credentials", op, ErrUnsupported)
	case resp.R2TempCredentials != nil:
		redact.Register(resp.R2TempCredentials.SecretAccessKey, resp.R2TempCredentials.SessionToken)
		return VendedCredentials{}, fmt.Errorf("%s: %w: Unity Catalog vended Cloudflare R2 credentials, which zbrecover does not support", op, ErrUnsupported)
	default:
		return VendedCredentials{}, fmt.Errorf("%s: %w: Unity Catalog returned no credentials", op, ErrUnsupported)
	}
	return out, nil
}

// refreshMargin is how long before expiry a cached credential is replaced: five minutes, or
// half the credential's lifetime when that is shorter.
const refreshMargin = 5 * time.Minute

// CredentialProvider returns a storage.CredentialProvider for the table that vends
// credentials on first use, caches them, and vends new ones once the cached ones are within
// the refresh margin of expiry. Concurrent callers share one request.
func (c *Client) CredentialProvider(tableID string, op Operation) storage.CredentialProvider {
	p := &vendingProvider{
		now: c.now,
		fetch: func(ctx context.Context) (VendedCredentials, error) {
			return c.TableCredentials(ctx, tableID, op)
		},
	}
	return p.get
}

type vendingProvider struct {
	mu      sync.Mutex
	now     func() time.Time
	fetch   func(context.Context) (VendedCredentials, error)
	cur     storage.Credentials
	fetched time.Time
	have    bool
}

func (p *vendingProvider) fresh(t time.Time) bool {
	if !p.have {
		return false
	}
	if p.cur.Expires.IsZero() {
		return true
	}
	margin := refreshMargin
	if life := p.cur.Expires.Sub(p.fetched); life/2 < margin {
		margin = life / 2
	}
	return t.Before(p.cur.Expires.Add(-margin))
}

func (p *vendingProvider) get(ctx context.Context) (storage.Credentials, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.fresh(now) {
		return p.cur, nil
	}
	v, err := p.fetch(ctx)
	if err != nil {
		return storage.Credentials{}, err
	}
	p.cur, p.fetched, p.have = v.Credentials, now, true
	logger().Debug("vended storage credentials", "url", redact.String(v.URL), "expires", v.Expires)
	return p.cur, nil
}
