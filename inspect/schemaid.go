package inspect

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/zbrecover/zbrecover/schemadiff"
)

// SchemaID returns a short, stable fingerprint of a Spark schema: the first 12 hex digits of
// the SHA-256 of a canonical form that covers column order, exact names, field ids, types and
// every nullability (columns, struct members, array elements, map values). Null counts and
// metadata are not part of it. Files with the same SchemaID load the same way.
func SchemaID(s schemadiff.Schema) string {
	sum := sha256.Sum256([]byte(SchemaKey(s)))
	return hex.EncodeToString(sum[:6])
}

// SchemaKey is the canonical text SchemaID hashes, for example
// "`id`:bigint not null,`tags`:array<string>".
func SchemaKey(s schemadiff.Schema) string {
	var b strings.Builder
	fieldsKey(&b, s.Fields)
	return b.String()
}
