package cmd

import (
	"github.com/spf13/cobra"
)

// environmentHelp lists every environment variable zbrecover reads, directly or through the
// SDKs it uses.
const environmentHelp = `Environment variables zbrecover reads.

Databricks (the unified authentication of databricks-sdk-go):
  DATABRICKS_HOST                 workspace URL
  DATABRICKS_TOKEN                personal access token
  DATABRICKS_CLIENT_ID            OAuth machine-to-machine client (service principal)
  DATABRICKS_CLIENT_SECRET        its secret
  DATABRICKS_CONFIG_PROFILE       profile of ~/.databrickscfg (also -p, --profile)
  DATABRICKS_CONFIG_FILE          another config file than ~/.databrickscfg
  DATABRICKS_WAREHOUSE_ID         SQL warehouse (also --warehouse-id)
  DATABRICKS_HTTP_PATH            SQL warehouse HTTP path (also --http-path)
  DATABRICKS_RATE_LIMIT           REST requests a second (default 200)
  ARM_CLIENT_ID, ARM_CLIENT_SECRET, ARM_TENANT_ID
                                  Azure service principal for an Azure Databricks workspace

Storage, when a table's storage is read with the store's own credentials:
  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE, AWS_REGION
                                  S3 (the AWS SDK's credential chain; also web identity and
                                  container credentials)
  GOOGLE_APPLICATION_CREDENTIALS  Google Cloud Storage (else gcloud application default
                                  credentials)
  AZURE_STORAGE_ACCOUNT, AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN,
  AZURE_STORAGE_CONNECTION_STRING, AZURE_CLIENT_ID, AZURE_CLIENT_SECRET, AZURE_TENANT_ID
                                  Azure Blob / Data Lake (a SAS in the URL works too)

Storage endpoints, read as the cloud SDKs and CLIs read them; the flag wins over the variable:
  AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL
                                  an S3-compatible endpoint, addressed path-style (also
                                  endpoint_url in the AWS config file; all ignored under
                                  AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true); --s3-endpoint
  STORAGE_EMULATOR_HOST           a Google Cloud Storage emulator (host:port or URL), without
                                  authentication; --gcs-endpoint
  AZURE_STORAGE_SERVICE_ENDPOINT  the Azure Blob service URL (az storage --blob-endpoint);
                                  --azure-endpoint (a connection string's BlobEndpoint wins)

zbrecover itself:
  XDG_STATE_HOME                  the journal's default place: $XDG_STATE_HOME/zbrecover
                                  (else ~/.local/state/zbrecover); --journal URL overrides it
  GOMEMLIMIT                      the soft memory limit (default 256MiB)
  TERM                            TERM=dumb draws no progress bar
  USER                            the operating system user journal records and run headers name
  ZBRECOVER_DEMO_STATEMENT_LOG    zbrecover demo only: append one JSON line per statement the
                                  local warehouse runs to this file (what demo serve --log does)

Secrets from any of these never appear in output, logs, errors or the journal.`

// NewCmdEnvironment returns the help topic `zbrecover help environment`.
func NewCmdEnvironment() *cobra.Command {
	return &cobra.Command{
		Use:   "environment",
		Short: "Environment variables zbrecover reads",
		Long:  environmentHelp,
	}
}
