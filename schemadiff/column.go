package schemadiff

import "encoding/json"

// Column is one top-level column of a table as reports show it (inspect's table, schema):
// its name, Spark type and nullability, and what Delta records for it.
type Column struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
	Comment  string `json:"comment,omitempty"`
	// PhysicalName is the column-mapping physical name data files use for the column; ID its
	// column-mapping id.
	PhysicalName string `json:"physical_name,omitempty"`
	ID           int64  `json:"id,omitempty"`
	// DeltaType is the type as the Delta log's schemaString writes it, when asked for.
	DeltaType json.RawMessage `json:"delta_type,omitempty"`
}

// Columns returns the top-level columns of s; withDelta adds each one's Delta type.
func Columns(s Schema, withDelta bool) []Column {
	out := make([]Column, len(s.Fields))
	for i, f := range s.Fields {
		out[i] = Column{Name: f.Name, Type: f.Type.String(), Nullable: f.Nullable, Comment: f.Comment, PhysicalName: f.PhysicalName, ID: f.ID}
		if withDelta {
			out[i].DeltaType = json.RawMessage(f.Type.DeltaJSON())
		}
	}
	return out
}
