package jsonout

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"sync"
)

// Encode writes v, a struct or a pointer to one, as one indented JSON document with
// "schema_version" as its first member, followed by a newline. v's members follow in the
// order json.Marshal gives them; < and > are not escaped (Spark types such as array<int> and
// SQL hold them). The document is encoded once: schema_version is a member of a wrapper type
// that embeds v's type, not text put into the encoded bytes.
func Encode(w io.Writer, v any) error {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return fmt.Errorf("jsonout: a %s is not a document (a struct)", rv.Kind())
	}
	wt, fields, err := wrapperOf(rv.Type())
	if err != nil {
		return err
	}
	doc := reflect.New(wt).Elem()
	doc.Field(0).SetInt(SchemaVersion)
	body := doc.Field(1)
	for i, f := range fields {
		body.Field(i).Set(rv.Field(f))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(doc.Interface())
}

type wrapper struct {
	t      reflect.Type
	fields []int // the exported fields of the document type, copied in order
	err    error
}

var wrappers sync.Map // reflect.Type → *wrapper

// wrapperOf returns, for a document type T, struct { SchemaVersion int64
// `json:"schema_version"`; P } where P is an unnamed struct of T's exported fields with their
// tags (the members json.Marshal writes of T), embedded so that its members are promoted into
// the document after schema_version; and the indexes of those fields in T.
func wrapperOf(t reflect.Type) (reflect.Type, []int, error) {
	if w, ok := wrappers.Load(t); ok {
		w := w.(*wrapper)
		return w.t, w.fields, w.err
	}
	w := &wrapper{}
	func() {
		defer func() {
			if r := recover(); r != nil {
				w.err = fmt.Errorf("jsonout: %s cannot be a document: %v", t, r)
			}
		}()
		var fs []reflect.StructField
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); f.IsExported() {
				fs = append(fs, reflect.StructField{Name: f.Name, Type: f.Type, Tag: f.Tag, Anonymous: f.Anonymous})
				w.fields = append(w.fields, i)
			}
		}
		body := reflect.StructOf(fs)
		w.t = reflect.StructOf([]reflect.StructField{
			{Name: "SchemaVersion", Type: reflect.TypeOf(int64(0)), Tag: `json:"schema_version"`},
			{Name: "Document", Type: body, Anonymous: true},
		})
	}()
	wrappers.Store(t, w)
	return w.t, w.fields, w.err
}
