package schemadiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ParseDDL parses a Spark column list such as
//
//	id BIGINT NOT NULL, name STRING COMMENT 'display name', s STRUCT<a: INT, b: ARRAY<STRING>>
//
// Names may be backquoted; types use any accepted spelling (BIGINT/LONG, INT/INTEGER,
// DECIMAL(p,s), TIMESTAMP/TIMESTAMP_LTZ, TIMESTAMP_NTZ, VARCHAR(n), …), case-insensitively,
// in SQL form (STRUCT<a: INT NOT NULL>) or simpleString form (struct<a:int>). Column options
// are NOT NULL, NULL and COMMENT '…'; anything else is an error. A whole "STRUCT<…>" is
// accepted too. Array elements and map values are nullable (DDL cannot say otherwise).
func ParseDDL(ddl string) (Schema, error) {
	p := &ddlParser{src: ddl}
	if err := p.lex(); err != nil {
		return Schema{}, fmt.Errorf("ddl: %w", err)
	}
	// A bare STRUCT<…> is the same column list.
	if p.peekWord("struct") && p.peekAt(1).text == "<" {
		t, err := p.parseType(nil)
		if err != nil {
			return Schema{}, fmt.Errorf("ddl: %w", err)
		}
		p.skipSemicolons()
		if !p.eof() {
			return Schema{}, fmt.Errorf("ddl: unexpected %s after the struct", p.peek())
		}
		if len(t.Fields) == 0 {
			return Schema{}, fmt.Errorf("ddl: no columns")
		}
		return Schema{Fields: t.Fields}, nil
	}
	var fields []Field
	for {
		f, err := p.parseField(nil, false)
		if err != nil {
			return Schema{}, fmt.Errorf("ddl: %w", err)
		}
		fields = append(fields, f)
		if p.accept(",") {
			continue
		}
		p.skipSemicolons()
		if p.eof() {
			break
		}
		return Schema{}, fmt.Errorf("ddl: unexpected %s after column %s (want \",\")", p.peek(), QuoteIdentIfNeeded(f.Name))
	}
	if err := checkUnique(fields, nil); err != nil {
		return Schema{}, fmt.Errorf("ddl: %w", err)
	}
	return Schema{Fields: fields}, nil
}

// ParseType parses one type in DDL or simpleString form: BIGINT, decimal(10,2),
// array<struct<a:int>>, MAP<STRING, INT>, …
func ParseType(s string) (Type, error) {
	p := &ddlParser{src: s}
	if err := p.lex(); err != nil {
		return Type{}, err
	}
	t, err := p.parseType(nil)
	if err != nil {
		return Type{}, err
	}
	if !p.eof() {
		return Type{}, fmt.Errorf("type %q: unexpected %s", s, p.peek())
	}
	return t, nil
}

// ParseSchemaFile parses a schema file as inspect --schema-file takes it: a Delta schemaString
// JSON document ({"type":"struct",…}), the JSON output of zbrecover schema (its Delta schema
// string, else its columns), a DESCRIBE TABLE EXTENDED … AS JSON document, a JSON array of
// Spark StructFields, or a Spark DDL column list. Column-mapping physical names survive every
// JSON form that carries them; DDL has none.
//
// A document over MaxSchemaBytes, types nested deeper than MaxDepth, a schema with no columns
// and duplicate names (case-insensitive, at any level) are refused.
func ParseSchemaFile(data []byte) (Schema, error) {
	if len(data) > MaxSchemaBytes {
		return Schema{}, fmt.Errorf("schema file is %d bytes, over the %d-byte limit", len(data), MaxSchemaBytes)
	}
	s, err := parseSchemaFile(data)
	if err != nil {
		return Schema{}, err
	}
	if len(s.Fields) == 0 {
		return Schema{}, fmt.Errorf("schema file: no columns")
	}
	if err := checkUniqueDeep(s.Fields, nil); err != nil {
		return Schema{}, fmt.Errorf("schema file: %w", err)
	}
	return s, nil
}

// checkUniqueDeep checks that no struct, at any level, has two members of the same name.
func checkUniqueDeep(fields []Field, parent *fieldPath) error {
	if err := checkUnique(fields, parent); err != nil {
		return err
	}
	for _, f := range fields {
		if err := checkUniqueType(f.Type, joinPath(parent, f.Name)); err != nil {
			return err
		}
	}
	return nil
}

func checkUniqueType(t Type, path *fieldPath) error {
	switch {
	case t.Kind == Struct:
		return checkUniqueDeep(t.Fields, path)
	case t.Kind == Array && t.Elem != nil:
		return checkUniqueType(*t.Elem, joinPath(path, "element"))
	case t.Kind == Map && t.Key != nil && t.Value != nil:
		if err := checkUniqueType(*t.Key, joinPath(path, "key")); err != nil {
			return err
		}
		return checkUniqueType(*t.Value, joinPath(path, "value"))
	}
	return nil
}

func parseSchemaFile(data []byte) (Schema, error) {
	trimmed := bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	switch {
	case len(trimmed) == 0:
		return Schema{}, fmt.Errorf("schema file is empty")
	case trimmed[0] == '{':
		var doc struct {
			Type    *string           `json:"type"`
			Columns []json.RawMessage `json:"columns"`
			Delta   *struct {
				SchemaString string `json:"schema_string"`
			} `json:"delta"`
		}
		if err := json.Unmarshal(trimmed, &doc); err == nil {
			switch {
			case doc.Type != nil && *doc.Type == "struct":
				return ParseDeltaSchema(string(trimmed))
			case doc.Delta != nil && doc.Delta.SchemaString != "":
				return ParseDeltaSchema(doc.Delta.SchemaString)
			case doc.Columns != nil:
				// DESCRIBE … AS JSON has a "type" too: the table type (MANAGED, …).
				return parseColumnsDocument(trimmed)
			case doc.Type == nil:
				return Schema{}, fmt.Errorf("schema file: a JSON object must be a Delta schema ({\"type\":\"struct\",\"fields\":[…]}), " +
					"the output of zbrecover schema -o json, or the output of DESCRIBE TABLE EXTENDED … AS JSON")
			}
		}
		// A schemaString itself.
		return ParseDeltaSchema(string(trimmed))
	case trimmed[0] == '"':
		var s string
		if err := json.Unmarshal(trimmed, &s); err != nil {
			return Schema{}, fmt.Errorf("schema file: %w", err)
		}
		return ParseDeltaSchema(s)
	case trimmed[0] == '[':
		v, err := decodeJSON(trimmed)
		if err != nil {
			return Schema{}, fmt.Errorf("schema file: %w", err)
		}
		t, err := sparkJSONType(map[string]any{"type": "struct", "fields": v}, nil)
		if err != nil {
			return Schema{}, fmt.Errorf("schema file: %w", err)
		}
		return Schema{Fields: t.Fields}, nil
	}
	return ParseDDL(string(trimmed))
}

// parseColumnsDocument parses a JSON object with a "columns" array: the output of zbrecover
// schema -o json (columns with "delta_type", the Delta form of their type, and "physical_name"
// and "id" under column mapping) or of DESCRIBE TABLE EXTENDED … AS JSON (columns with "type"
// objects).
func parseColumnsDocument(doc []byte) (Schema, error) {
	var d struct {
		Columns []struct {
			Name         string          `json:"name"`
			Nullable     *bool           `json:"nullable"`
			Comment      string          `json:"comment"`
			PhysicalName string          `json:"physical_name"`
			ID           int64           `json:"id"`
			DeltaType    json.RawMessage `json:"delta_type"`
		} `json:"columns"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return Schema{}, fmt.Errorf("schema file: %w", err)
	}
	if len(d.Columns) == 0 {
		return Schema{}, fmt.Errorf("schema file: no columns")
	}
	if d.Columns[0].DeltaType == nil {
		return ParseDescribeJSON(doc)
	}
	fields := make([]Field, 0, len(d.Columns))
	for _, c := range d.Columns {
		if c.DeltaType == nil {
			return Schema{}, fmt.Errorf("schema file: column %s has no delta_type", QuoteIdentIfNeeded(c.Name))
		}
		v, err := decodeJSON(c.DeltaType)
		if err != nil {
			return Schema{}, fmt.Errorf("schema file: column %s: %w", QuoteIdentIfNeeded(c.Name), err)
		}
		t, err := sparkJSONType(v, joinPath(nil, c.Name))
		if err != nil {
			return Schema{}, fmt.Errorf("schema file: %w", err)
		}
		f := Field{Name: c.Name, Type: t, Nullable: c.Nullable == nil || *c.Nullable, Comment: c.Comment,
			PhysicalName: c.PhysicalName, ID: c.ID}
		fields = append(fields, f)
	}
	if err := checkUnique(fields, nil); err != nil {
		return Schema{}, fmt.Errorf("schema file: %w", err)
	}
	return Schema{Fields: fields}, nil
}

func checkUnique(fields []Field, parent *fieldPath) error {
	seen := make(map[string]string, len(fields))
	for _, f := range fields {
		k := strings.ToLower(f.Name)
		if prev, ok := seen[k]; ok {
			return fmt.Errorf("duplicate column %s (and %s): names are case-insensitive", joinPath(parent, f.Name), joinPath(parent, prev))
		}
		seen[k] = f.Name
	}
	return nil
}

type tokKind int

const (
	tokWord   tokKind = iota // identifier or keyword
	tokQuoted                // `quoted identifier`
	tokNumber
	tokString
	tokPunct
	tokEOF
)

type token struct {
	kind tokKind
	text string
	pos  int
}

func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "end of input"
	case tokString:
		return fmt.Sprintf("string %s at offset %d", QuoteString(t.text), t.pos)
	case tokQuoted:
		return fmt.Sprintf("%s at offset %d", QuoteIdent(t.text), t.pos)
	}
	return fmt.Sprintf("%q at offset %d", t.text, t.pos)
}

type ddlParser struct {
	src  string
	toks []token
	i    int
}

func (p *ddlParser) lex() error {
	s := p.src
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsSpace(r):
			i += w
		case r == '-' && strings.HasPrefix(s[i:], "--"):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case r == '`':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return fmt.Errorf("unterminated quoted name at offset %d", i)
				}
				if s[j] == '`' {
					if j+1 < len(s) && s[j+1] == '`' {
						b.WriteByte('`')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			p.toks = append(p.toks, token{tokQuoted, b.String(), i})
			i = j + 1
		case r == '\'' || r == '"':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return fmt.Errorf("unterminated string at offset %d", i)
				}
				c := s[j]
				if c == '\\' && j+1 < len(s) {
					b.WriteByte(s[j+1])
					j += 2
					continue
				}
				if rune(c) == r {
					if j+1 < len(s) && rune(s[j+1]) == r { // SQL doubled quote
						b.WriteByte(c)
						j += 2
						continue
					}
					break
				}
				b.WriteByte(c)
				j++
			}
			p.toks = append(p.toks, token{tokString, b.String(), i})
			i = j + 1
		case r >= '0' && r <= '9' || r == '-' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i + 1
			for j < len(s) && (s[j] >= '0' && s[j] <= '9') {
				j++
			}
			// Spark identifiers may start with a digit (1col); a run of digits followed by a
			// letter is a word.
			if j < len(s) && isWordByte(s[j]) && r != '-' {
				for j < len(s) && isWordByte(s[j]) {
					j++
				}
				p.toks = append(p.toks, token{tokWord, s[i:j], i})
			} else {
				p.toks = append(p.toks, token{tokNumber, s[i:j], i})
			}
			i = j
		case r == '_' || unicode.IsLetter(r):
			j := i
			for j < len(s) {
				r2, w2 := utf8.DecodeRuneInString(s[j:])
				if r2 != '_' && !unicode.IsLetter(r2) && !unicode.IsDigit(r2) {
					break
				}
				j += w2
			}
			p.toks = append(p.toks, token{tokWord, s[i:j], i})
			i = j
		case strings.ContainsRune("<>(),:;", r):
			p.toks = append(p.toks, token{tokPunct, string(r), i})
			i += w
		default:
			return fmt.Errorf("unexpected character %q at offset %d", r, i)
		}
	}
	p.toks = append(p.toks, token{kind: tokEOF, pos: len(s)})
	return nil
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *ddlParser) peek() token { return p.toks[p.i] }

func (p *ddlParser) peekAt(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}

func (p *ddlParser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *ddlParser) eof() bool { return p.peek().kind == tokEOF }

func (p *ddlParser) accept(punct string) bool {
	if t := p.peek(); t.kind == tokPunct && t.text == punct {
		p.i++
		return true
	}
	return false
}

func (p *ddlParser) expect(punct string) error {
	if !p.accept(punct) {
		return fmt.Errorf("want %q, got %s", punct, p.peek())
	}
	return nil
}

func (p *ddlParser) peekWord(w string) bool {
	t := p.peek()
	return t.kind == tokWord && strings.EqualFold(t.text, w)
}

func (p *ddlParser) acceptWord(w string) bool {
	if p.peekWord(w) {
		p.i++
		return true
	}
	return false
}

func (p *ddlParser) skipSemicolons() {
	for p.accept(";") {
	}
}

// parseField parses "name [:] type [NOT NULL | NULL | COMMENT '…']…". In a struct, the colon
// is optional as in Spark.
func (p *ddlParser) parseField(parent *fieldPath, inStruct bool) (Field, error) {
	t := p.next()
	if t.kind != tokWord && t.kind != tokQuoted {
		return Field{}, fmt.Errorf("want a column name, got %s", t)
	}
	name := t.text
	path := joinPath(parent, name)
	p.accept(":")
	typ, err := p.parseType(path)
	if err != nil {
		return Field{}, err
	}
	f := Field{Name: name, Type: typ, Nullable: true}
	for {
		switch {
		case p.acceptWord("not"):
			if !p.acceptWord("null") {
				return Field{}, fmt.Errorf("column %s: want NULL after NOT, got %s", path, p.peek())
			}
			f.Nullable = false
		case p.acceptWord("null"):
			f.Nullable = true
		case p.acceptWord("comment"):
			c := p.next()
			if c.kind != tokString {
				return Field{}, fmt.Errorf("column %s: want a string after COMMENT, got %s", path, c)
			}
			f.Comment = c.text
		default:
			if t := p.peek(); t.kind == tokWord {
				return Field{}, fmt.Errorf("column %s: unsupported column option %s (only NOT NULL and COMMENT are accepted)", path, t)
			}
			return f, nil
		}
	}
}

func (p *ddlParser) parseType(path *fieldPath) (Type, error) {
	if err := tooDeep(path); err != nil {
		return Type{}, err
	}
	t := p.next()
	if t.kind != tokWord {
		return Type{}, fmt.Errorf("want a type%s, got %s", at(path), t)
	}
	name := strings.ToLower(t.text)
	// expect consumes punct, or fails naming the type being parsed.
	expect := func(punct string) error {
		if err := p.expect(punct); err != nil {
			return fmt.Errorf("%s%s: %w", name, at(path), err)
		}
		return nil
	}
	switch name {
	case "struct":
		if err := expect("<"); err != nil {
			return Type{}, err
		}
		var fields []Field
		if !p.accept(">") {
			for {
				f, err := p.parseField(path, true)
				if err != nil {
					return Type{}, err
				}
				fields = append(fields, f)
				if p.accept(",") {
					continue
				}
				if err := expect(">"); err != nil {
					return Type{}, err
				}
				break
			}
		}
		if err := checkUnique(fields, path); err != nil {
			return Type{}, err
		}
		return Type{Kind: Struct, Fields: fields}, nil
	case "array":
		if err := expect("<"); err != nil {
			return Type{}, err
		}
		elem, err := p.parseType(joinPath(path, "element"))
		if err != nil {
			return Type{}, err
		}
		if err := expect(">"); err != nil {
			return Type{}, err
		}
		return ArrayType(elem, true), nil
	case "map":
		if err := expect("<"); err != nil {
			return Type{}, err
		}
		key, err := p.parseType(joinPath(path, "key"))
		if err != nil {
			return Type{}, err
		}
		if err := expect(","); err != nil {
			return Type{}, err
		}
		val, err := p.parseType(joinPath(path, "value"))
		if err != nil {
			return Type{}, err
		}
		if err := expect(">"); err != nil {
			return Type{}, err
		}
		return MapType(key, val, true), nil
	}
	// geometry(crs) and geography(crs[, algorithm]): the CRS is a word, a number or
	// authority:code, so the text between the parentheses goes to ParsePrimitive as written.
	if (name == "geometry" || name == "geography") && p.peek().kind == tokPunct && p.peek().text == "(" {
		open := p.next()
		for !p.accept(")") {
			if c := p.next(); c.kind == tokEOF || c.kind == tokPunct && (c.text == "(" || c.text == "<" || c.text == ">") {
				return Type{}, fmt.Errorf("type %s%s: want \")\", got %s", t.text, at(path), c)
			}
		}
		closing := p.toks[p.i-1]
		typ, err := ParsePrimitive(t.text + p.src[open.pos:closing.pos+1])
		if err != nil {
			return Type{}, fmt.Errorf("%w%s", err, at(path))
		}
		return typ, nil
	}
	// Parameters: decimal(p[,s]), varchar(n), char(n).
	if p.accept("(") {
		var args []int
		for {
			n := p.next()
			if n.kind != tokNumber {
				return Type{}, fmt.Errorf("type %s%s: want a number, got %s", t.text, at(path), n)
			}
			v, err := strconv.Atoi(n.text)
			if err != nil {
				return Type{}, fmt.Errorf("type %s%s: %w", t.text, at(path), err)
			}
			args = append(args, v)
			if p.accept(",") {
				continue
			}
			if err := p.expect(")"); err != nil {
				return Type{}, fmt.Errorf("type %s%s: %w", t.text, at(path), err)
			}
			break
		}
		switch name {
		case "decimal", "dec", "numeric":
			if len(args) > 2 {
				return Type{}, fmt.Errorf("type %s%s: too many parameters", t.text, at(path))
			}
			s := 0
			if len(args) == 2 {
				s = args[1]
			}
			dt, err := checkDecimal(args[0], s)
			if err != nil {
				return Type{}, fmt.Errorf("%w%s", err, at(path))
			}
			return dt, nil
		case "char", "varchar", "character":
			if len(args) != 1 {
				return Type{}, fmt.Errorf("type %s%s: want one length", t.text, at(path))
			}
			return StringType, nil
		}
		return Type{}, fmt.Errorf("type %s%s takes no parameters", t.text, at(path))
	}
	if name == "interval" {
		return Type{}, fmt.Errorf("type INTERVAL%s is not supported by zbrecover", at(path))
	}
	typ, err := ParsePrimitive(name)
	if err != nil {
		return Type{}, fmt.Errorf("%w%s", err, at(path))
	}
	if typ.Kind == String && p.acceptWord("collate") {
		if c := p.next(); c.kind != tokWord && c.kind != tokQuoted {
			return Type{}, fmt.Errorf("type STRING%s: want a collation name after COLLATE, got %s", at(path), c)
		}
	}
	return typ, nil
}
