// Package all builds the registry of every storage backend zbrecover ships.
package all

import (
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/local"
)

// Registry returns a registry with every backend registered.
func Registry() *storage.Registry {
	return storage.NewRegistry(local.NewFactory())
}
