package mem_test

import (
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

func TestConformance(t *testing.T) {
	for name, b := range map[string]*mem.Backend{"mem": mem.New(), "mem-paged": mem.New(mem.WithPageSize(2))} {
		storagetest.Run(t, name, func(t *testing.T, root string) (storage.Backend, storagetest.Put) {
			sub := b.Sub(root)
			put := func(key string, data []byte) error {
				sub.Set(key, data, time.Now())
				return nil
			}
			return sub, put
		})
	}
}
