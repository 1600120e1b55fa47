// Package jsonout holds what every JSON document zbrecover prints shares: the version of the
// documents' shapes, written as the first member of each ("schema_version"), and the one
// encoder that writes a document with it (Encode).
package jsonout

// SchemaVersion is the version of the shapes of zbrecover's JSON output (docs/json-output.md).
// It changes when a member is removed or changes meaning; new members do not change it.
const SchemaVersion = 2
