package databricks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/databricks/databricks-sdk-go/client"
	"github.com/databricks/databricks-sdk-go/config"
	"github.com/databricks/databricks-sdk-go/service/catalog"
	"github.com/databricks/databricks-sdk-go/useragent"

	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/internal/suggest"
	"github.com/zbrecover/zbrecover/storage"
)

// Options select the workspace, the identity and the SQL warehouse. Every field is optional:
// unset fields come from the environment (DATABRICKS_HOST, DATABRICKS_TOKEN,
// DATABRICKS_CLIENT_ID / DATABRICKS_CLIENT_SECRET, ARM_*, DATABRICKS_CONFIG_PROFILE,
// DATABRICKS_CONFIG_FILE, DATABRICKS_WAREHOUSE_ID, DATABRICKS_HTTP_PATH) and then from the
// ~/.databrickscfg profile, following the Databricks unified authentication rules
// (databricks-sdk-go config). Secrets are never taken from flags.
type Options struct {
	// Profile names a section of the config file (--profile).
	Profile string
	// Host is the workspace URL (https://adb-123.4.azuredatabricks.net). Tests may use
	// http://127.0.0.1:PORT.
	Host string
	// ConfigFile replaces ~/.databrickscfg (DATABRICKS_CONFIG_FILE also does).
	ConfigFile string

	// WarehouseID selects the SQL warehouse (--warehouse-id); its HTTP path is
	// /sql/1.0/warehouses/<id>.
	WarehouseID string
	// HTTPPath is the warehouse's HTTP path (--http-path); it wins over WarehouseID.
	HTTPPath string
	// DSN, when set, is a complete databricks-sql-go DSN used as is for SQL (tests, and setups
	// the unified configuration cannot express). Telemetry is still turned off.
	DSN string

	// Version is zbrecover's version, sent in the user agent as zbrecover/<version>.
	Version string
	// Log receives the SDK's and the SQL driver's logs, redacted; nil discards them.
	Log *slog.Logger
	// Transport carries every HTTP request (REST and SQL); nil uses one like the SDK's whose
	// connections and TLS handshakes time out after DialTimeout. Either way an unreachable
	// workspace is reported at once (UnreachableError), without the retries of the SDK or
	// the SQL driver.
	Transport http.RoundTripper
	// RetryTimeout bounds how long a failing REST call is retried (default 30s).
	RetryTimeout time.Duration
	// HTTPTimeout bounds one REST request (default 60s).
	HTTPTimeout time.Duration
	// QueryTimeout, when positive, is the server-side timeout of each SQL statement.
	QueryTimeout time.Duration
	// FilesConcurrency is the first limit of Files API requests in flight, shared by every
	// volume of the client (default DefaultFilesConcurrency). The limit follows the
	// workspace's answers: each 429 or 503 halves it (at most once per round of requests),
	// other answers raise it back, up to MaxFilesConcurrencyFactor times this value.
	FilesConcurrency int
	// FilesRetry says how Files API requests are tried again; zero fields take the values of
	// DefaultFilesRetryPolicy. A nil OnRetry logs each retry to Log at info level.
	FilesRetry storage.RetryPolicy
}

// defaultRateLimit is the client-side limit of the SDK's REST requests a second (Unity
// Catalog, credential vending, warehouses). Files API requests do not go through it: they
// follow the workspace's answers instead (filesClient).
const defaultRateLimit = 200

// Client talks to one Databricks workspace with one resolved identity: Unity Catalog lookups,
// credential vending, and SQL warehouse sessions.
type Client struct {
	cfg *config.Config
	api *client.DatabricksClient
	// files sends the Files API requests of the client's volumes.
	files *filesClient
	// transport carries every request (REST and SQL) and reports an unreachable workspace.
	transport http.RoundTripper
	catalogs  catalog.CatalogsInterface
	schemas   catalog.SchemasInterface
	tables    catalog.TablesInterface
	volumes   catalog.VolumesInterface
	creds     catalog.TemporaryTableCredentialsInterface
	opts      Options
	now       func() time.Time
}

var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// userAgentVersion returns a version the SDK accepts (semantic versioning) for zbrecover's
// user agent entry.
func userAgentVersion(v string) string {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	if semver.MatchString(v) {
		return v
	}
	out := "0.0.0-" + strings.Trim(useragent.Sanitize(strings.ReplaceAll(v, ".", "-")), "-")
	if !semver.MatchString(out) {
		return "0.0.0-dev"
	}
	return out
}

// NewClient resolves the configuration and the credentials. It fails with an error wrapping
// ErrConfig that names the missing setting when no host or no credentials can be found, or
// when the requested profile does not exist. Secrets never appear in its errors.
func NewClient(ctx context.Context, opts Options) (*Client, error) {
	installLogging(opts.Log)
	useragent.WithProduct("zbrecover", userAgentVersion(opts.Version))

	base := opts.Transport
	if base == nil {
		base = defaultTransport()
	}
	reach := &reachTransport{base: base}
	cfg := &config.Config{
		Profile:       opts.Profile,
		Host:          opts.Host,
		ConfigFile:    opts.ConfigFile,
		WarehouseID:   opts.WarehouseID,
		HTTPTransport: reach,
	}
	cfg.RetryTimeoutSeconds = int(orDefault(opts.RetryTimeout, 30*time.Second) / time.Second)
	cfg.HTTPTimeoutSeconds = int(orDefault(opts.HTTPTimeout, 60*time.Second) / time.Second)

	if err := checkProfile(opts); err != nil {
		return nil, err
	}
	if err := cfg.EnsureResolved(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, redact.Error(err))
	}
	redact.Register(cfg.Token, cfg.ClientSecret, cfg.AzureClientSecret, cfg.Password, cfg.GoogleCredentials)
	reach.host = redact.String(cfg.Host)
	if strings.EqualFold(cfg.AuthType, "external-browser") {
		// Other Databricks tools' name for the user login (OAuth U2M); this SDK calls it
		// databricks-cli and reads the token that `databricks auth login` caches.
		logger().Debug("auth type external-browser read as databricks-cli (OAuth user login)")
		cfg.AuthType = u2mAuthType
	}

	if cfg.Host == "" && cfg.AzureResourceID == "" {
		where := "the environment"
		if p := profileName(opts); p != "" {
			where = fmt.Sprintf("profile %q of %s", p, configFilePath(opts))
		}
		return nil, fmt.Errorf("%w: no Databricks workspace host in %s: set DATABRICKS_HOST, "+
			"or pass --profile naming a ~/.databrickscfg profile with a host", ErrConfig, where)
	}
	// Resolve the credentials now, so that a missing token is reported before any work starts.
	probe, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.CanonicalHostName(), "/")+"/", nil)
	if err != nil {
		return nil, fmt.Errorf("%w: workspace host %q: %v", ErrConfig, redact.String(cfg.Host), err)
	}
	if err := cfg.Authenticate(probe); err != nil {
		msg := redact.String(err.Error())
		login := loginCommand(cfg.Host, cfg.Profile)
		var expired *config.CliInvalidRefreshTokenError
		switch {
		case strings.Contains(msg, "cannot configure default credentials"):
			// The SDK says the same when a secret is missing and when the one given was
			// refused (oauth-m2m fetches a token with it, and a refusal drops to this).
			if who := givenSecret(cfg); who != "" {
				return nil, fmt.Errorf("%w: %s was rejected by %s: check that it is current and was issued for this workspace (%s)",
					ErrUnauthenticated, who, cfg.Host, debugSummary(cfg))
			}
			// Without a secret the SDK has also tried the Databricks CLI's token cache.
			return nil, fmt.Errorf("%w: no credentials for %s: %s; or, to sign in as a user, run `%s` (%s)",
				ErrConfig, cfg.Host, credentialsHint, login, debugSummary(cfg))
		case errors.As(err, &expired):
			return nil, fmt.Errorf("%w: the OAuth login for %s has expired (its refresh token is no longer valid): run `%s`, then run again",
				ErrUnauthenticated, cfg.Host, login)
		case cfg.AuthType == u2mAuthType:
			return nil, fmt.Errorf("%w: no OAuth login for %s in the Databricks CLI's token cache (auth type %s): run `%s`, "+
				"then run again (%s)", ErrConfig, cfg.Host, u2mAuthType, login, msg)
		}
		return nil, fmt.Errorf("%w: credentials for %s (auth type %s): %s", ErrConfig, cfg.Host, orUnknown(cfg.AuthType), msg)
	}
	if cfg.RateLimitPerSecond == 0 {
		// Above the SDK's default of 15 requests a second; the workspace answers 429 when it
		// is too much, which the SDK retries. DATABRICKS_RATE_LIMIT (or rate_limit) still wins.
		cfg.RateLimitPerSecond = defaultRateLimit
	}
	api, err := client.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, redact.Error(err))
	}
	c := &Client{
		cfg:       cfg,
		api:       api,
		files:     newFilesClient(cfg, reach, opts),
		transport: reach,
		catalogs:  catalog.NewCatalogs(api),
		schemas:   catalog.NewSchemas(api),
		tables:    catalog.NewTables(api),
		volumes:   catalog.NewVolumes(api),
		creds:     catalog.NewTemporaryTableCredentials(api),
		opts:      opts,
		now:       time.Now,
	}
	logger().Debug("databricks workspace resolved", "host", cfg.Host, "auth_type", cfg.AuthType, "profile", cfg.Profile)
	return c, nil
}

// u2mAuthType is the SDK's auth type of the user login (OAuth U2M) through the Databricks CLI's
// token cache.
const u2mAuthType = "databricks-cli"

// loginCommand returns the Databricks CLI command that logs a user in to host, under profile
// when one is named.
func loginCommand(host, profile string) string {
	cmd := "databricks auth login --host " + host
	if profile != "" {
		cmd += " --profile " + profile
	}
	return cmd
}

// Host returns the workspace URL.
func (c *Client) Host() string { return c.cfg.Host }

// AuthType returns the unified-auth method in use (pat, oauth-m2m, azure-client-secret, …).
func (c *Client) AuthType() string { return c.cfg.AuthType }

// Config returns the resolved SDK configuration. Callers must not print it: use Describe.
func (c *Client) Config() *config.Config { return c.cfg }

// Describe returns a one-line description of the resolved configuration with secrets masked,
// for -v logs and error reports.
func (c *Client) Describe() string { return debugSummary(c.cfg) }

// givenSecret names the secret-based credentials the configuration holds ("" when none), for
// telling a rejected secret from a missing one.
func givenSecret(cfg *config.Config) string {
	switch {
	case cfg.ClientID != "" && cfg.ClientSecret != "":
		return fmt.Sprintf("the OAuth client secret of service principal %q", cfg.ClientID)
	case cfg.AzureClientID != "" && cfg.AzureClientSecret != "":
		return fmt.Sprintf("the Azure client secret of %q", cfg.AzureClientID)
	}
	return ""
}

func debugSummary(cfg *config.Config) string {
	s := config.ConfigAttributes.DebugString(cfg)
	if s == "" {
		return "no settings found"
	}
	return redact.String(s)
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func profileName(opts Options) string {
	if opts.Profile != "" {
		return opts.Profile
	}
	return os.Getenv("DATABRICKS_CONFIG_PROFILE")
}

func configFilePath(opts Options) string {
	p := opts.ConfigFile
	if p == "" {
		p = os.Getenv("DATABRICKS_CONFIG_FILE")
	}
	if p == "" {
		p = "~/.databrickscfg"
	}
	if strings.HasPrefix(p, "~") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[1:])
		}
	}
	return p
}

// checkProfile reports a named profile that the config file does not hold, before the SDK
// does: the SDK silently ignores a missing file (and falls back to other settings), and for a
// missing section names neither the sections there are nor the one probably meant. The errors
// say where the profile's name came from (--profile or DATABRICKS_CONFIG_PROFILE), list the
// file's profiles with a did-you-mean, and name the Databricks variables of the environment
// that are set (names only, never values), which are used when no profile is named.
func checkProfile(opts Options) error {
	p := profileName(opts)
	if p == "" {
		return nil
	}
	from := "--profile " + p
	if opts.Profile == "" {
		from = "DATABRICKS_CONFIG_PROFILE=" + p
	}
	path := configFilePath(opts)
	data, err := os.ReadFile(path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s names a profile of the config file %s, which cannot be read: %v", ErrConfig, from, path, err)
		}
		msg := fmt.Sprintf("%s names a profile of the config file %s, which does not exist", from, path)
		if opts.ConfigFile == "" && os.Getenv("DATABRICKS_CONFIG_FILE") != "" {
			msg += " (DATABRICKS_CONFIG_FILE names it)"
		}
		if set := setAuthVariables(); len(set) > 0 {
			drop := "run without --profile"
			if opts.Profile == "" {
				drop = "unset DATABRICKS_CONFIG_PROFILE"
			}
			return fmt.Errorf("%w: %s. The environment sets %s: to use those settings, %s; to use the profile, create it "+
				"with `databricks configure --profile %s`", ErrConfig, msg, strings.Join(set, ", "), drop, p)
		}
		return fmt.Errorf("%w: %s: create it with `databricks configure --profile %s`, set DATABRICKS_CONFIG_FILE to the "+
			"file that holds the profile, or set DATABRICKS_HOST and DATABRICKS_TOKEN instead", ErrConfig, msg, p)
	}
	profiles := ConfigProfiles(data)
	if slices.Contains(profiles, p) {
		return nil
	}
	msg := fmt.Sprintf("%s: the config file %s has no profile %q", from, path, p)
	if len(profiles) == 0 {
		return fmt.Errorf("%w: %s; it holds no profile: add one with `databricks configure --profile %s`", ErrConfig, msg, p)
	}
	if dym := suggest.Phrase(p, profiles, strconv.Quote); dym != "" {
		msg += "; " + dym
	} else {
		msg += "."
	}
	return fmt.Errorf("%w: %s Its profiles: %s. Name one of them, or add this one with `databricks configure --profile %s`",
		ErrConfig, msg, suggest.List(profiles, 20), p)
}

// ConfigProfiles returns the profiles (section names) of a ~/.databrickscfg file, in the
// file's order; DEFAULT is listed when the file has a [DEFAULT] section.
func ConfigProfiles(data []byte) []string {
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if len(line) < 2 || line[0] != '[' || line[len(line)-1] != ']' {
			continue
		}
		if name := strings.TrimSpace(line[1 : len(line)-1]); name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// authVariables are the environment variables that configure the workspace and identity when
// no profile is named.
var authVariables = []string{"DATABRICKS_HOST", "DATABRICKS_TOKEN", "DATABRICKS_CLIENT_ID", "DATABRICKS_CLIENT_SECRET",
	"DATABRICKS_ACCOUNT_ID", "DATABRICKS_AZURE_RESOURCE_ID", "ARM_CLIENT_ID", "ARM_CLIENT_SECRET", "ARM_TENANT_ID"}

// setAuthVariables returns the names of the authVariables set to a non-empty value.
func setAuthVariables() []string {
	var out []string
	for _, v := range authVariables {
		if os.Getenv(v) != "" {
			out = append(out, v)
		}
	}
	return out
}

// HTTPPath returns the SQL warehouse HTTP path: Options.HTTPPath, else DATABRICKS_HTTP_PATH,
// else /sql/1.0/warehouses/<id> from Options.WarehouseID, DATABRICKS_WAREHOUSE_ID or the
// profile's warehouse_id. It fails with ErrConfig naming the settings when none is set.
func (c *Client) HTTPPath() (string, error) {
	if p := c.opts.HTTPPath; p != "" {
		return p, nil
	}
	if p := os.Getenv("DATABRICKS_HTTP_PATH"); p != "" {
		return p, nil
	}
	if id := c.cfg.WarehouseID; id != "" {
		return "/sql/1.0/warehouses/" + id, nil
	}
	return "", fmt.Errorf("%w: no SQL warehouse: pass --warehouse-id or --http-path, or set DATABRICKS_WAREHOUSE_ID "+
		"(or warehouse_id in the ~/.databrickscfg profile)", ErrConfig)
}
