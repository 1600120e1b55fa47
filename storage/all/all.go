// Package all builds the storage registry with every backend of this build.
package all

import (
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/azure"
	"github.com/zbrecover/zbrecover/storage/gcs"
	"github.com/zbrecover/zbrecover/storage/local"
	"github.com/zbrecover/zbrecover/storage/s3"
)

// Registry returns a new registry with the local, S3, GCS and Azure backends.
func Registry() *storage.Registry {
	return storage.NewRegistry(local.NewFactory(), s3.NewFactory(), gcs.NewFactory(), azure.NewFactory())
}
