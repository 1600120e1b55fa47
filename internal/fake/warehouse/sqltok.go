package warehouse

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tokKind classifies a token of Databricks SQL.
type tokKind uint8

const (
	tkEOF    tokKind = iota
	tkIdent          // bare word, keywords included; val is the word
	tkQuoted         // `quoted identifier`; val is the unquoted name
	tkString         // 'string' or "string" (Spark treats both as literals); val is the content
	tkNumber         // 42, 1.5, 1e3 (a Spark suffix such as L or BD is dropped from val)
	tkOp             // punctuation and operators
)

// token is one lexical token. pre holds the whitespace before it (comments become a space),
// so statements can be rebuilt with their original layout.
type token struct {
	kind tokKind
	val  string
	raw  string // the source text of the token
	pre  string
	pos  int // byte offset in the statement
	// literal marks a bound parameter: raw is already DuckDB SQL.
	literal bool
}

func (t token) isOp(s string) bool { return t.kind == tkOp && t.val == s }

// isKw reports whether t is the bare keyword kw (case-insensitive).
func (t token) isKw(kw string) bool { return t.kind == tkIdent && strings.EqualFold(t.val, kw) }

func (t token) text() string {
	if t.kind == tkEOF {
		return "end of input"
	}
	return t.raw
}

// tokenize splits a Databricks SQL statement into tokens. Strings follow Spark's rules:
// single or double quotes, backslash escapes, r'raw' strings.
func tokenize(s string) ([]token, error) {
	var toks []token
	var pre strings.Builder
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			pre.WriteByte(c)
			i++
			continue
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			pre.WriteByte(' ')
			continue
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return nil, syntaxError(s, i, "unclosed comment")
			}
			i += end + 4
			pre.WriteByte(' ')
			continue
		}
		start := i
		tok := token{pre: pre.String(), pos: start}
		pre.Reset()
		switch {
		case (c == 'r' || c == 'R') && i+1 < len(s) && (s[i+1] == '\'' || s[i+1] == '"'):
			q := s[i+1]
			end := strings.IndexByte(s[i+2:], q)
			if end < 0 {
				return nil, syntaxError(s, i, "unclosed string literal")
			}
			tok.kind, tok.val = tkString, s[i+2:i+2+end]
			i += end + 3
		case isIdentStart(c):
			for i < len(s) && isIdentPart(s[i]) {
				i++
			}
			tok.kind, tok.val = tkIdent, s[start:i]
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
				i++
			}
			if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
				j := i + 1
				if j < len(s) && (s[j] == '+' || s[j] == '-') {
					j++
				}
				if j < len(s) && s[j] >= '0' && s[j] <= '9' {
					i = j
					for i < len(s) && s[i] >= '0' && s[i] <= '9' {
						i++
					}
				}
			}
			tok.kind, tok.val = tkNumber, s[start:i]
			// Spark literal suffixes: 10L, 1S, 1Y, 1.5D, 1.5F, 1.5BD.
			if i+1 < len(s) && strings.EqualFold(s[i:i+2], "BD") && (i+2 == len(s) || !isIdentPart(s[i+2])) {
				i += 2
			} else if i < len(s) && strings.ContainsRune("LlSsYyDdFf", rune(s[i])) && (i+1 == len(s) || !isIdentPart(s[i+1])) {
				i++
			}
		case c == '`':
			var b strings.Builder
			i++
			for {
				if i >= len(s) {
					return nil, syntaxError(s, start, "unclosed quoted identifier")
				}
				if s[i] == '`' {
					if i+1 < len(s) && s[i+1] == '`' {
						b.WriteByte('`')
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteByte(s[i])
				i++
			}
			tok.kind, tok.val = tkQuoted, b.String()
		case c == '\'' || c == '"':
			v, n, err := unquoteSpark(s[i:])
			if err != nil {
				return nil, syntaxError(s, i, err.Error())
			}
			tok.kind, tok.val = tkString, v
			i += n
		default:
			tok.kind = tkOp
			two := ""
			if i+1 < len(s) {
				two = s[i : i+2]
			}
			switch two {
			case "::", "||", "->", "=>", ":=", "==", "!=":
				tok.val = two
				i += 2
			default:
				r, size := utf8.DecodeRuneInString(s[i:])
				tok.val = string(r)
				i += size
			}
		}
		tok.raw = s[start:i]
		toks = append(toks, tok)
	}
	toks = append(toks, token{kind: tkEOF, pre: pre.String(), pos: len(s)})
	return toks, nil
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' || c == '$' }

// unquoteSpark reads a Spark string literal at the start of s and returns its value and
// length. Spark strings use backslash escapes; a doubled quote is not an escape.
func unquoteSpark(s string) (string, int, error) {
	q := s[0]
	var b strings.Builder
	i := 1
	for i < len(s) {
		c := s[i]
		switch {
		case c == q:
			return b.String(), i + 1, nil
		case c == '\\' && i+1 < len(s):
			i++
			switch e := s[i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case '0':
				b.WriteByte(0)
			case 'u':
				if i+4 < len(s) {
					if r, err := strconv.ParseUint(s[i+1:i+5], 16, 32); err == nil {
						b.WriteRune(rune(r))
						i += 4
						break
					}
				}
				b.WriteByte(e)
			default:
				b.WriteByte(e)
			}
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	return "", 0, fmt.Errorf("unclosed string literal")
}

// duckString quotes s as a DuckDB string literal.
func duckString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func syntaxError(stmt string, pos int, msg string) error {
	near := stmt[pos:]
	if len(near) > 20 {
		near = near[:20]
	}
	return &SQLError{Class: "PARSE_SYNTAX_ERROR", SQLState: "42601",
		Message: fmt.Sprintf("Syntax error at or near '%s' (%s).", strings.TrimSpace(near), msg)}
}

// parser walks a token slice.
type parser struct {
	toks []token
	i    int
	src  string // the statement, for error positions
}

func newParser(src string) (*parser, error) {
	toks, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	return &parser{toks: toks, src: src}, nil
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) peekN(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tkEOF {
		p.i++
	}
	return t
}

// atEnd reports whether only an optional ";" remains.
func (p *parser) atEnd() bool {
	j := p.i
	for j < len(p.toks) && p.toks[j].isOp(";") {
		j++
	}
	return j >= len(p.toks) || p.toks[j].kind == tkEOF
}

func (p *parser) acceptKw(kws ...string) bool {
	for k, kw := range kws {
		if !p.peekN(k).isKw(kw) {
			return false
		}
	}
	p.i += len(kws)
	return true
}

func (p *parser) expectKw(kws ...string) error {
	if !p.acceptKw(kws...) {
		return p.errorf("expected %s", strings.Join(kws, " "))
	}
	return nil
}

func (p *parser) acceptOp(op string) bool {
	if p.peek().isOp(op) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectOp(op string) error {
	if !p.acceptOp(op) {
		return p.errorf("expected '%s'", op)
	}
	return nil
}

// ident reads a bare or backtick-quoted identifier.
func (p *parser) ident() (string, error) {
	t := p.peek()
	if t.kind == tkIdent || t.kind == tkQuoted {
		p.i++
		return t.val, nil
	}
	return "", p.errorf("expected an identifier")
}

// qualifiedName reads a dotted name of one to three parts.
func (p *parser) qualifiedName() ([]string, error) {
	first, err := p.ident()
	if err != nil {
		return nil, err
	}
	parts := []string{first}
	for p.peek().isOp(".") && (p.peekN(1).kind == tkIdent || p.peekN(1).kind == tkQuoted) {
		p.i++
		part, _ := p.ident()
		parts = append(parts, part)
	}
	if len(parts) > 3 {
		return nil, p.errorf("a name has at most three parts (catalog.schema.table)")
	}
	return parts, nil
}

func (p *parser) stringLit() (string, error) {
	t := p.peek()
	if t.kind != tkString {
		return "", p.errorf("expected a string literal")
	}
	p.i++
	v := t.val
	for p.peek().kind == tkString { // adjacent literals concatenate
		v += p.next().val
	}
	return v, nil
}

func (p *parser) errorf(format string, args ...any) error {
	t := p.peek()
	return &SQLError{Class: "PARSE_SYNTAX_ERROR", SQLState: "42601",
		Message: fmt.Sprintf("Syntax error at or near '%s' (%s).", t.text(), fmt.Sprintf(format, args...))}
}

// rest returns the source text from the current token to the end, without a trailing ";".
func (p *parser) rest() string {
	if p.peek().kind == tkEOF {
		return ""
	}
	return strings.TrimRight(strings.TrimSpace(p.src[p.peek().pos:]), "; \t\n")
}
