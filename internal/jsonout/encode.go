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
	wt, copyBody, err := wrapperOf(rv.Type())
	if err != nil {
		return err
	}
	doc := reflect.New(wt).Elem()
	doc.Field(0).SetInt(SchemaVersion)
	copyBody(doc.Field(1), rv)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(doc.Interface())
}

type wrapper struct {
	t    reflect.Type
	copy func(dst, src reflect.Value) // dst: the body of t; src: a document
	err  error
}

var wrappers sync.Map // reflect.Type → *wrapper

// wrapperOf returns, for a document type T, struct { SchemaVersion int64
// `json:"schema_version"`; P } where P is methodless(T), embedded so that its members are
// promoted into the document after schema_version; and the function that copies a T into P.
func wrapperOf(t reflect.Type) (reflect.Type, func(dst, src reflect.Value), error) {
	if w, ok := wrappers.Load(t); ok {
		w := w.(*wrapper)
		return w.t, w.copy, w.err
	}
	w := &wrapper{}
	func() {
		defer func() {
			if r := recover(); r != nil {
				w.err = fmt.Errorf("jsonout: %s cannot be a document: %v", t, r)
			}
		}()
		body, cp := methodless(t, 0)
		w.t = reflect.StructOf([]reflect.StructField{
			{Name: "SchemaVersion", Type: reflect.TypeOf(int64(0)), Tag: `json:"schema_version"`},
			{Name: "Document", Type: body, Anonymous: true},
		})
		w.copy = cp
	}()
	wrappers.Store(t, w)
	return w.t, w.copy, w.err
}

// methodless returns an unnamed struct type with the members json.Marshal writes of the struct
// type t, and the function that copies a t into it. Exported fields keep their types and tags.
// An embedded struct (or pointer to one) whose members json.Marshal promotes, exported or not,
// becomes an embedded unnamed struct of its own members: reflect.StructOf cannot embed a type
// with methods (cleanup.Report embeds *cleanup.Plan), and an unnamed struct has none. A nil
// embedded pointer stays nil, so its members are left out, as json.Marshal leaves them out.
func methodless(t reflect.Type, depth int) (reflect.Type, func(dst, src reflect.Value)) {
	if depth > 8 {
		panic("embedded types nest too deep")
	}
	var fs []reflect.StructField
	var copies []func(dst, src reflect.Value)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		et, ptr := f.Type, f.Type.Kind() == reflect.Pointer
		if ptr {
			et = et.Elem()
		}
		j := len(fs)
		switch {
		case f.Anonymous && et.Kind() == reflect.Struct && f.Tag.Get("json") == "":
			inner, cp := methodless(et, depth+1)
			ft := inner
			if ptr {
				ft = reflect.PointerTo(inner)
			}
			fs = append(fs, reflect.StructField{Name: fmt.Sprintf("Embedded%d", i), Type: ft, Anonymous: true})
			copies = append(copies, func(dst, src reflect.Value) {
				s := src.Field(i)
				if !ptr {
					cp(dst.Field(j), s)
					return
				}
				if s.IsNil() {
					return
				}
				p := reflect.New(inner)
				cp(p.Elem(), s.Elem())
				dst.Field(j).Set(p)
			})
		case f.IsExported():
			fs = append(fs, reflect.StructField{Name: f.Name, Type: f.Type, Tag: f.Tag, Anonymous: f.Anonymous})
			copies = append(copies, func(dst, src reflect.Value) { dst.Field(j).Set(src.Field(i)) })
		}
	}
	return reflect.StructOf(fs), func(dst, src reflect.Value) {
		for _, c := range copies {
			c(dst, src)
		}
	}
}
