package s3

import "sync"

// regions holds the region S3 named for each bucket, by endpoint and bucket, for the life of
// the process: a bucket's region does not change, and a run that opens many roots in one
// bucket (a scan of a catalog's tables, whose managed storage shares a bucket) asks once.
var regions sync.Map // endpoint + "\x00" + bucket → *regionEntry

type regionEntry struct {
	done   chan struct{} // closed once region is set
	region string
}

// cachedRegion returns the region remembered for the bucket, or asks discover: one call at a
// time per bucket, whose answer the callers waiting for it share. A non-empty answer is
// remembered; after an empty one, the next call asks again.
func cachedRegion(endpoint, bucket string, discover func() string) string {
	key := endpoint + "\x00" + bucket
	e := &regionEntry{done: make(chan struct{})}
	v, loaded := regions.LoadOrStore(key, e)
	if loaded {
		e = v.(*regionEntry)
		<-e.done
		return e.region
	}
	e.region = discover()
	if e.region == "" {
		regions.Delete(key)
	}
	close(e.done)
	return e.region
}
