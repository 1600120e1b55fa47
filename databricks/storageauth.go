package databricks

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/zbrecover/zbrecover/storage"
)

// StorageAuth chooses how zbrecover authenticates to the table's storage (--storage-auth).
type StorageAuth string

const (
	// StorageAuthAuto uses vended credentials when a table name is given and the environment
	// holds no credentials for the table's store; otherwise the store's default chain.
	StorageAuthAuto StorageAuth = "auto"
	// StorageAuthVended always uses Unity Catalog credential vending (needs a table name).
	StorageAuthVended StorageAuth = "vended"
	// StorageAuthDefault always uses the store's default credential chain.
	StorageAuthDefault StorageAuth = "default"
)

// ParseStorageAuth parses a --storage-auth value; "" means auto.
func ParseStorageAuth(s string) (StorageAuth, error) {
	switch StorageAuth(strings.ToLower(strings.TrimSpace(s))) {
	case "", StorageAuthAuto:
		return StorageAuthAuto, nil
	case StorageAuthVended:
		return StorageAuthVended, nil
	case StorageAuthDefault:
		return StorageAuthDefault, nil
	}
	return "", fmt.Errorf("invalid --storage-auth %q: want auto, vended or default", s)
}

// Env is the part of the process environment the auto rule looks at.
type Env struct {
	Getenv func(string) string
	// Exists reports whether a file exists.
	Exists func(path string) bool
	// Home is the user's home directory ("" when unknown).
	Home string
}

// OSEnv returns the real environment.
func OSEnv() Env {
	home, _ := os.UserHomeDir()
	return Env{
		Getenv: os.Getenv,
		Exists: func(p string) bool { _, err := os.Stat(p); return err == nil },
		Home:   home,
	}
}

// CloudCredentials reports whether the environment configures credentials for the store of
// loc, and names the setting found. The rule, per store (no network probing: instance
// metadata services are not consulted):
//
//   - s3: AWS_ACCESS_KEY_ID, AWS_PROFILE, AWS_WEB_IDENTITY_TOKEN_FILE,
//     AWS_CONTAINER_CREDENTIALS_FULL_URI or AWS_CONTAINER_CREDENTIALS_RELATIVE_URI is set, or
//     the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials)
//     exists;
//   - gs: GOOGLE_APPLICATION_CREDENTIALS is set, or gcloud's application default credentials
//     file exists (CLOUDSDK_CONFIG or ~/.config/gcloud, application_default_credentials.json);
//   - az: the URL carries a SAS query, or AZURE_STORAGE_SAS_TOKEN, AZURE_STORAGE_KEY,
//     AZURE_STORAGE_CONNECTION_STRING or AZURE_CLIENT_ID is set;
//   - file: always (local files need no credentials).
func CloudCredentials(loc storage.Location, env Env) (bool, string) {
	get := func(n string) string {
		if env.Getenv == nil {
			return ""
		}
		return env.Getenv(n)
	}
	set := func(names ...string) (bool, string) {
		for _, n := range names {
			if get(n) != "" {
				return true, n
			}
		}
		return false, ""
	}
	exists := func(p string) bool { return p != "" && env.Exists != nil && env.Exists(p) }
	switch loc.Scheme {
	case "file":
		return true, "local file system"
	case "s3":
		if ok, n := set("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
			"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"); ok {
			return true, n
		}
		f := get("AWS_SHARED_CREDENTIALS_FILE")
		if f == "" && env.Home != "" {
			f = filepath.Join(env.Home, ".aws", "credentials")
		}
		if exists(f) {
			return true, f
		}
	case "gs":
		if ok, n := set("GOOGLE_APPLICATION_CREDENTIALS"); ok {
			return true, n
		}
		dir := get("CLOUDSDK_CONFIG")
		if dir == "" && env.Home != "" {
			dir = filepath.Join(env.Home, ".config", "gcloud")
		}
		if dir != "" {
			if f := filepath.Join(dir, "application_default_credentials.json"); exists(f) {
				return true, f
			}
		}
	case "az":
		if len(loc.Query) > 0 && loc.Query.Get("sig") != "" {
			return true, "SAS token in the URL"
		}
		if ok, n := set("AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_KEY", "AZURE_STORAGE_CONNECTION_STRING", "AZURE_CLIENT_ID"); ok {
			return true, n
		}
	}
	return false, ""
}

// ChooseStorageAuth applies the --storage-auth rule. It returns whether to use vended
// credentials and a sentence saying why, for the -v log. With auto, vending is chosen exactly
// when a table name is given and CloudCredentials finds nothing for the table's store. vended
// without a table name is an error.
func ChooseStorageAuth(mode StorageAuth, haveTable bool, loc storage.Location, env Env) (bool, string, error) {
	switch mode {
	case StorageAuthDefault:
		return false, "--storage-auth default: the store's default credential chain", nil
	case StorageAuthVended:
		if !haveTable {
			return false, "", fmt.Errorf("--storage-auth vended needs --table: Unity Catalog vends credentials per table")
		}
		if loc.Scheme == "file" {
			return false, "", fmt.Errorf("--storage-auth vended: %s is a local path; Unity Catalog vends credentials for cloud storage only", loc)
		}
		return true, "--storage-auth vended: Unity Catalog credential vending", nil
	case StorageAuthAuto, "":
		if !haveTable {
			return false, "no table name: the store's default credential chain", nil
		}
		if ok, what := CloudCredentials(loc, env); ok {
			return false, fmt.Sprintf("credentials found for %s (%s): the store's default credential chain", loc.Scheme, what), nil
		}
		return true, fmt.Sprintf("no %s credentials in the environment: Unity Catalog credential vending", loc.Scheme), nil
	}
	return false, "", fmt.Errorf("invalid storage auth mode %q", mode)
}
