package storage

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/internal/redact"
)

// SchemeVolume is the Scheme of a Unity Catalog volume path: /Volumes/<catalog>/<schema>/
// <volume>/… (or dbfs:/Volumes/…), opened through the Databricks Files API.
const SchemeVolume = "volume"

// Location is a parsed storage URL or volume path: a place. Two spellings of one place parse
// to Locations with one Key (Equal); Contains says whether a place lies inside another.
type Location struct {
	// Scheme is the backend's scheme: "s3" (s3a:// too), "gs", "az" (abfss://, abfs://,
	// wasbs:// and wasb:// all map to the Blob endpoint), "file" or "volume" (SchemeVolume).
	Scheme string
	// Bucket is the S3 / GCS bucket or the Azure container. Empty for file and volume.
	Bucket string
	// Account is the Azure storage account name.
	Account string
	// BlobHost is the Azure Blob endpoint host, such as "acct.blob.core.windows.net" (the dfs
	// host of an abfss:// URL is mapped to its blob twin, sovereign clouds included).
	BlobHost string
	// Catalog, Schema and Volume name a Unity Catalog volume (Scheme "volume"), in lower
	// case: Unity Catalog identifiers are case-insensitive and stored in lower case.
	Catalog, Schema, Volume string
	// Path is the prefix inside the bucket, container or volume, without leading or trailing
	// "/" and without empty or "." elements, or the absolute directory for file.
	Path string
	// Query holds the URL's query parameters (an Azure SAS token, for example). It is secret
	// and never printed.
	Query url.Values
	// Original is the scheme as written (s3, s3a, gs, abfss, wasbs, file, "dbfs" for a
	// dbfs:/Volumes path, or "" for a bare path).
	Original string
}

// String returns the location as a URL, with secrets redacted.
func (l Location) String() string {
	var s string
	switch l.Scheme {
	case "file":
		s = "file://" + filepath.ToSlash(l.Path)
	case SchemeVolume:
		s = "/Volumes/" + l.Catalog + "/" + l.Schema + "/" + l.Volume
		if l.Path != "" {
			s += "/" + l.Path
		}
	case "az":
		orig := l.Original
		if orig == "" {
			orig = "wasbs"
		}
		host := l.BlobHost
		if orig == "abfss" {
			host = strings.Replace(host, ".blob.", ".dfs.", 1)
		}
		s = orig + "://" + l.Bucket + "@" + host + "/" + l.Path
	default:
		s = l.Scheme + "://" + l.Bucket + "/" + l.Path
	}
	if len(l.Query) > 0 {
		s += "?" + redactedQuery(l.Query)
	}
	return s
}

// URL returns the location as a URL without its query: what SQL statements name (a COPY INTO
// source folder, for example). The query holds secrets (an Azure SAS), which never go into SQL.
// A volume's is its /Volumes/<catalog>/<schema>/<volume>/… path, its names in lower case.
func (l Location) URL() string {
	q := l.Query
	l.Query = nil
	s := l.String()
	l.Query = q
	return s
}

// Join returns the location of rel, a "/"-separated path under l (leading and trailing "/"
// ignored; "" gives l itself). The query is kept.
func (l Location) Join(rel string) Location {
	rel = strings.Trim(rel, "/")
	if rel == "" {
		return l
	}
	out := l
	switch {
	case l.Scheme == "file":
		out.Path = filepath.Join(l.Path, filepath.FromSlash(rel))
	case l.Path == "":
		out.Path = rel
	default:
		out.Path = l.Path + "/" + rel
	}
	return out
}

// KeyPrefix returns what turns a key under the location into an object name in its bucket or
// container: "" at the bucket's root, else Path and "/".
func (l Location) KeyPrefix() string {
	if l.Path == "" {
		return ""
	}
	return l.Path + "/"
}

// SupportedSchemes lists the URL forms Parse accepts, for error messages and help.
const SupportedSchemes = "s3://bucket/prefix, gs://bucket/prefix, " +
	"abfss://container@account.dfs.core.windows.net/path, " +
	"wasbs://container@account.blob.core.windows.net/path, /Volumes/catalog/schema/volume/path, " +
	"file:///absolute/path, or a local path"

// Parse parses a storage URL, a Unity Catalog volume path or a local path.
//
// A path that starts with /Volumes/ (or dbfs:/Volumes/) is a Unity Catalog volume path,
// /Volumes/<catalog>/<schema>/<volume>[/<dir>…], as SQL names it: a local folder under
// /Volumes (a macOS mount point) is written file:///Volumes/…. A /Volumes path that names no
// volume (fewer than three names) is an error, and so is a ".." element in it. Any other
// string without "://" is a local path (made absolute). Any other scheme is an error that
// names the supported ones.
//
// Paths are cleaned: empty and "." elements are dropped (as Hadoop's paths, which the
// warehouse reads through, drop them), so that the backend opened and the statements sent
// name one object for one place. A ".." element of a URL is kept as written (an object store
// takes it literally); callers that write somewhere refuse it.
func Parse(raw string) (Location, error) {
	if strings.TrimSpace(raw) == "" {
		return Location{}, fmt.Errorf("empty storage location; use %s", SupportedSchemes)
	}
	if rest, ok := cutPrefixFold(raw, "dbfs:"); ok {
		if strings.HasPrefix(rest, "///") {
			rest = rest[2:] // dbfs:///Volumes/…, the long form of dbfs:/Volumes/…
		}
		if !isVolumePrefix(rest) {
			return Location{}, fmt.Errorf("storage location %q: only Unity Catalog volume paths are read under dbfs: "+
				"(dbfs:/Volumes/<catalog>/<schema>/<volume>/…); use %s", Redact(raw), SupportedSchemes)
		}
		loc, err := parseVolume(rest, raw)
		loc.Original = "dbfs"
		return loc, err
	}
	if isVolumePrefix(raw) {
		return parseVolume(raw, raw)
	}
	if !strings.Contains(raw, "://") {
		if i := strings.Index(raw, ":"); i > 1 && !strings.ContainsAny(raw[:i], `/\`) {
			scheme := strings.ToLower(raw[:i])
			if scheme == "file" && strings.HasPrefix(raw[i+1:], "/") {
				return Parse("file://" + raw[i+1:]) // file:/abs/path, the short form of file:///abs/path
			}
			if knownSchemes[scheme] {
				return Location{}, fmt.Errorf("storage location %q: %q must be followed by \"//\"; use %s",
					Redact(raw), raw[:i+1], SupportedSchemes)
			}
			return Location{}, fmt.Errorf("unsupported storage location %q: unknown scheme %q; use %s",
				Redact(raw), raw[:i], SupportedSchemes)
		}
		abs, err := filepath.Abs(raw)
		if err != nil {
			return Location{}, fmt.Errorf("local path %q: %w", raw, err)
		}
		return Location{Scheme: "file", Path: abs}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Location{}, fmt.Errorf("invalid storage URL %q: %v", Redact(raw), Redact(err.Error()))
	}
	scheme := strings.ToLower(u.Scheme)
	// A "#" or a "?" in a path would be taken for a fragment or a query and silently cut the
	// prefix short (s3://b/t#2 would list all of s3://b/t...): refuse them unless encoded.
	// Azure URLs may carry a SAS token as their query.
	if strings.Contains(raw, "#") {
		return Location{}, fmt.Errorf("storage URL %q holds a \"#\"; write it as %%23 in a path", Redact(raw))
	}
	if (u.RawQuery != "" || u.ForceQuery) && knownSchemes[scheme] && !azureSchemes[scheme] {
		return Location{}, fmt.Errorf("storage URL %q holds a \"?\"; %s:// URLs take no query, write it as %%3F in a path", Redact(raw), scheme)
	}
	loc := Location{Original: scheme, Query: u.Query()}
	if len(loc.Query) == 0 {
		loc.Query = nil
	}
	p := cleanElements(u.Path)
	switch scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return Location{}, fmt.Errorf("file URL %q has a host; use file:///absolute/path", Redact(raw))
		}
		if u.Path == "" {
			return Location{}, fmt.Errorf("file URL %q has no path; use file:///absolute/path", Redact(raw))
		}
		loc.Scheme, loc.Path = "file", filepath.Clean(filepath.FromSlash(u.Path))
	case "s3", "s3a", "gs":
		if u.Host == "" {
			return Location{}, fmt.Errorf("storage URL %q has no bucket; use %s://bucket/prefix", Redact(raw), scheme)
		}
		if u.User != nil {
			return Location{}, fmt.Errorf("storage URL %q carries credentials; pass them through the environment instead", Redact(raw))
		}
		loc.Scheme, loc.Bucket, loc.Path = scheme, u.Host, p
		if scheme == "s3a" {
			loc.Scheme = "s3"
		}
	case "abfss", "abfs", "wasbs", "wasb":
		if u.User == nil || u.User.Username() == "" {
			endpoint := "blob"
			if strings.HasPrefix(scheme, "abfs") {
				endpoint = "dfs"
			}
			return Location{}, fmt.Errorf("storage URL %q has no container; use %s://container@account.%s.core.windows.net/path",
				Redact(raw), scheme, endpoint)
		}
		if _, hasPw := u.User.Password(); hasPw {
			return Location{}, fmt.Errorf("storage URL %q carries a password; pass credentials through the environment instead", Redact(raw))
		}
		host := strings.ToLower(u.Hostname())
		dot := strings.IndexByte(host, '.')
		if dot <= 0 {
			return Location{}, fmt.Errorf("storage URL %q: host must be <account>.dfs.core.windows.net or <account>.blob.core.windows.net", Redact(raw))
		}
		account, suffix := host[:dot], host[dot+1:]
		switch {
		case strings.HasPrefix(suffix, "dfs."):
			suffix = "blob." + strings.TrimPrefix(suffix, "dfs.")
		case strings.HasPrefix(suffix, "blob."):
		default:
			return Location{}, fmt.Errorf("storage URL %q: host must be <account>.dfs.<cloud suffix> or <account>.blob.<cloud suffix>", Redact(raw))
		}
		loc.Scheme, loc.Bucket, loc.Account, loc.BlobHost, loc.Path = "az", u.User.Username(), account, account+"."+suffix, p
		// abfs:// and wasb:// name the same stores as their TLS forms, which are what we use.
		loc.Original = map[string]string{"abfs": "abfss", "abfss": "abfss", "wasb": "wasbs", "wasbs": "wasbs"}[scheme]
	default:
		if hint := httpsHint(u); hint != "" {
			return Location{}, fmt.Errorf("unsupported storage location %q: %s", Redact(raw), hint)
		}
		return Location{}, fmt.Errorf("unsupported storage location %q: unknown scheme %q; use %s", Redact(raw), u.Scheme, SupportedSchemes)
	}
	return loc, nil
}

// isVolumePrefix reports whether p is read as a volume path: "/Volumes" alone or followed by
// "/".
func isVolumePrefix(p string) bool {
	return p == "/Volumes" || strings.HasPrefix(p, "/Volumes/")
}

// parseVolume parses p, a path that starts with /Volumes, as a volume location; raw is what
// the caller was given, for errors.
func parseVolume(p, raw string) (Location, error) {
	var els []string
	for _, el := range strings.Split(p, "/") {
		switch el {
		case "", ".":
		case "..":
			return Location{}, fmt.Errorf("volume path %q has a \"..\" element; name the folder without it", Redact(raw))
		default:
			els = append(els, el)
		}
	}
	if len(els) < 4 {
		return Location{}, fmt.Errorf("volume path %q names no volume: a volume path is /Volumes/<catalog>/<schema>/<volume>/<dir> "+
			"(a local folder under /Volumes is file:///Volumes/…)", Redact(raw))
	}
	return Location{Scheme: SchemeVolume, Catalog: strings.ToLower(els[1]), Schema: strings.ToLower(els[2]),
		Volume: strings.ToLower(els[3]), Path: strings.Join(els[4:], "/")}, nil
}

// cleanElements returns a URL path without leading or trailing "/" and without empty or "."
// elements.
func cleanElements(p string) string {
	var els []string
	for _, el := range strings.Split(p, "/") {
		if el != "" && el != "." {
			els = append(els, el)
		}
	}
	return strings.Join(els, "/")
}

// cutPrefixFold is strings.CutPrefix with prefix matched in any letter case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// knownSchemes are the URL schemes Parse accepts; azureSchemes are those of Azure, whose URLs
// may carry a SAS token as their query.
var (
	knownSchemes = map[string]bool{"s3": true, "s3a": true, "gs": true, "file": true,
		"abfss": true, "abfs": true, "wasbs": true, "wasb": true}
	azureSchemes = map[string]bool{"abfss": true, "abfs": true, "wasbs": true, "wasb": true}
)

// Credentials are short-lived credentials for one store, such as those Unity Catalog vends for
// a table. Only the fields of the location's store are set.
type Credentials struct {
	AWSAccessKeyID     string
	AWSSecretAccessKey string
	AWSSessionToken    string
	GCSOAuthToken      string
	AzureSASToken      string
	// Expires is when the credentials stop working; the zero time means never.
	Expires time.Time
}

// CredentialProvider returns current credentials; backends call it again before Expires.
type CredentialProvider func(ctx context.Context) (Credentials, error)

// Config carries the options that backends need beyond the URL. The zero Config uses each
// store's default credential chain and public endpoint.
type Config struct {
	// S3Region overrides region discovery.
	S3Region string
	// S3Endpoint points the S3 client at an S3-compatible store (path-style addressing).
	S3Endpoint string
	// GCSEndpoint points the GCS client at another endpoint (an emulator), without auth.
	GCSEndpoint string
	// AzureEndpoint replaces https://<account>.blob.<suffix>/ (for Azurite:
	// http://127.0.0.1:10000/devstoreaccount1/).
	AzureEndpoint string
	// Credentials, when set, replace the store's default credential chain.
	Credentials CredentialProvider
	// UserAgent is added to requests where the SDK allows it.
	UserAgent string
	// Transport, when set, carries the backend's HTTP requests (tests count or delay requests
	// with it). Nil uses the SDK's default transport.
	Transport http.RoundTripper
	// Logger receives the SDKs' own log lines (at debug level); nil discards them, so an SDK
	// never writes to the process's stderr by itself.
	Logger *slog.Logger
	// PageSize, when positive, caps the objects per list request (tests exercise pagination
	// with it). Zero uses the store's maximum.
	PageSize int
	// MaxAttempts, when positive, caps the attempts the SDK makes for one request (1 turns the
	// SDK's own retries off, for callers that retry with WithRetry). Zero keeps the SDK default.
	MaxAttempts int
}

// Factory opens backends for one or more URL schemes.
type Factory interface {
	// Scheme is the Location.Scheme this factory opens ("s3", "gs", "az", "file").
	Scheme() string
	// Open returns a backend rooted at loc.
	Open(ctx context.Context, loc Location, cfg Config) (Backend, error)
}

// NewFactory returns a Factory for scheme whose Open calls open. A backend package offers its
// factory as
//
//	func NewFactory() storage.Factory { return storage.NewFactory("s3", New) }
func NewFactory[B Backend](scheme string, open func(context.Context, Location, Config) (B, error)) Factory {
	return factory[B]{scheme: scheme, open: open}
}

type factory[B Backend] struct {
	scheme string
	open   func(context.Context, Location, Config) (B, error)
}

func (f factory[B]) Scheme() string { return f.scheme }

func (f factory[B]) Open(ctx context.Context, loc Location, cfg Config) (Backend, error) {
	b, err := f.open(ctx, loc, cfg)
	if err != nil {
		// A nil *T in the Backend interface would not compare equal to nil.
		return nil, err
	}
	return b, nil
}

// Registry maps schemes to factories. Build it in one place (storage/all) and pass it down.
type Registry struct {
	factories map[string]Factory
}

// NewRegistry returns a registry holding fs.
func NewRegistry(fs ...Factory) *Registry {
	r := &Registry{factories: map[string]Factory{}}
	for _, f := range fs {
		r.Register(f)
	}
	return r
}

// Register adds f, replacing any factory for the same scheme.
func (r *Registry) Register(f Factory) { r.factories[f.Scheme()] = f }

// With returns a new registry holding r's factories and fs (which replace r's for the same
// schemes); r is left as it is.
func (r *Registry) With(fs ...Factory) *Registry {
	out := &Registry{factories: make(map[string]Factory, len(r.factories)+len(fs))}
	for s, f := range r.factories {
		out.factories[s] = f
	}
	for _, f := range fs {
		out.Register(f)
	}
	return out
}

// Schemes returns the registered schemes, sorted.
func (r *Registry) Schemes() []string {
	out := make([]string, 0, len(r.factories))
	for s := range r.factories {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Open parses raw (see Parse) and opens a backend for it, as OpenLocation does.
func (r *Registry) Open(ctx context.Context, raw string, cfg Config) (Backend, error) {
	loc, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	return r.OpenLocation(ctx, loc, cfg)
}

// OpenLocation opens a backend for an already parsed location with the factory registered for
// its scheme. It fails, naming the schemes this build has, when there is none. Errors show
// the location with its secrets redacted.
func (r *Registry) OpenLocation(ctx context.Context, loc Location, cfg Config) (Backend, error) {
	f, ok := r.factories[loc.Scheme]
	if !ok {
		return nil, fmt.Errorf("storage %s: no backend for scheme %q in this build (have %s)",
			loc, loc.Scheme, strings.Join(r.Schemes(), ", "))
	}
	b, err := f.Open(ctx, loc, cfg)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", loc, err)
	}
	return b, nil
}

// secretParams are the query parameters whose values String redacts: the secret names of the
// redactor, and "code" and "key", which are secret in a URL's query but too common to redact in
// free text.
var secretParams = func() map[string]bool {
	m := map[string]bool{"code": true, "key": true}
	for _, n := range redact.SecretNames {
		m[n] = true
	}
	return m
}()

// Redacted is what replaces a secret.
const Redacted = redact.Redacted

func redactedQuery(q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('&')
		}
		v := strings.Join(q[k], ",")
		if secretParams[strings.ToLower(k)] {
			v = Redacted
		}
		b.WriteString(url.QueryEscape(k) + "=" + url.QueryEscape(v))
	}
	return b.String()
}

// Redact removes secrets from a URL or any text that may contain one. It is the process's one
// redactor, internal/redact.String: registered secrets, SAS signatures and tokens in query
// strings, user:password in URLs, bearer tokens, Databricks tokens and the like.
func Redact(s string) string { return redact.String(s) }

// httpsHint turns an https:// URL of a storage service into the form zbrecover reads, for the
// error message: an Azure Blob / Data Lake endpoint into abfss://, an S3 or GCS endpoint into
// s3:// or gs://. The query (a SAS) is left out of the suggestion.
func httpsHint(u *url.URL) string {
	if u.Scheme != "https" && u.Scheme != "http" {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	parts := strings.SplitN(strings.Trim(u.Path, "/"), "/", 2)
	rest := ""
	if len(parts) == 2 {
		rest = parts[1]
	}
	switch {
	case strings.Contains(host, ".blob.core.") || strings.Contains(host, ".dfs.core."):
		account, suffix, _ := strings.Cut(host, ".")
		suffix = strings.Replace(suffix, "blob.", "dfs.", 1)
		if parts[0] == "" {
			return "name the container: abfss://<container>@" + account + "." + suffix + "/<path>"
		}
		return fmt.Sprintf("did you mean abfss://%s@%s.%s/%s ? (a SAS token goes in the query or AZURE_STORAGE_SAS_TOKEN)", parts[0], account, suffix, rest)
	case host == "storage.googleapis.com":
		return fmt.Sprintf("did you mean gs://%s/%s ?", parts[0], rest)
	case strings.HasSuffix(host, ".amazonaws.com") && strings.Contains(host, ".s3"):
		bucket, _, _ := strings.Cut(host, ".s3")
		return fmt.Sprintf("did you mean s3://%s/%s ?", bucket, strings.Trim(u.Path, "/"))
	}
	return ""
}
