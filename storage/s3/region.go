package s3

import "sync"

// regions holds the region S3 named for each bucket, by endpoint and bucket, for the life of
// the process: a bucket's region does not change, and a run that opens many roots in one
// bucket (a scan of a catalog's tables, whose managed storage shares a bucket) asks once.
var regions sync.Map // endpoint + "\x00" + bucket → region

// cachedRegion returns the region remembered for the bucket, or asks discover and remembers
// a non-empty answer.
func cachedRegion(endpoint, bucket string, discover func() string) string {
	key := endpoint + "\x00" + bucket
	if r, ok := regions.Load(key); ok {
		return r.(string)
	}
	r := discover()
	if r != "" {
		regions.Store(key, r)
	}
	return r
}
