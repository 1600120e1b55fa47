// Package jsonout holds what every JSON document zbrecover prints shares: the version of the
// documents' shapes, written as the first member of each ("schema_version").
package jsonout

import (
	"bytes"
	"strconv"
)

var version = strconv.Itoa(SchemaVersion)

// SchemaVersion is the version of the shapes of zbrecover's JSON output (docs/json-output.md).
// It changes when a member is removed or changes meaning; new members do not change it.
const SchemaVersion = 2

// Versioned returns doc, a JSON object as json.Marshal or an indenting json.Encoder writes
// it, with "schema_version" as its first member. Anything but an object is returned as it is.
func Versioned(doc []byte) []byte {
	trimmed := bytes.TrimLeft(doc, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return doc
	}
	body := bytes.TrimLeft(trimmed[1:], " \t\r\n")
	if bytes.HasPrefix(body, []byte(`"schema_version"`)) {
		return doc // the document has it already
	}
	indented := len(trimmed) > 1 && trimmed[1] == '\n'
	var out bytes.Buffer
	out.Grow(len(doc) + 24)
	switch {
	case len(body) > 0 && body[0] == '}': // {}
		out.WriteString(`{"schema_version":` + version + `}`)
		out.Write(body[1:])
	case indented:
		out.WriteString("{\n  \"schema_version\": " + version + ",\n")
		out.Write(trimmed[2:])
	default:
		out.WriteString(`{"schema_version":` + version + `,`)
		out.Write(trimmed[1:])
	}
	return out.Bytes()
}
