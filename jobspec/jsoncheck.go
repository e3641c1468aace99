package jobspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"

	"github.com/droverhq/drover/structs"
)

// jsonChecker walks the JSON tokens alongside the Go types they decode
// into, to report unknown fields with their positions.
type jsonChecker struct {
	filename  string
	src       []byte
	dec       *json.Decoder
	errs      Errors
	jobOffset int
	// valueStart maps where json.Unmarshal reports a type error for a
	// value (just past a scalar, or just past the '{' or '[' that opens a
	// composite) to where the value starts.
	valueStart map[int]int
	// groupCopies are task members to compare with their group's once
	// the job is decoded (checkGroupCopies).
	groupCopies []groupCopy
}

func (c *jsonChecker) check(target any) error {
	c.dec = json.NewDecoder(bytes.NewReader(c.src))
	c.dec.UseNumber()
	c.valueStart = map[int]int{}
	start := c.nextStart()
	c.jobOffset = start
	if start >= len(c.src) || c.src[start] != '{' {
		return Errors{c.errorAt(start, "Invalid JSON job", "A JSON job file must hold one object: {\"Job\": {...}} or the job itself.")}
	}
	path := ""
	if _, bare := target.(*structs.Job); bare {
		path = "Job"
	}
	if err := c.value(typeOf(target), path); err != nil {
		return c.decodeError(err)
	}
	extra := c.nextStart()
	if tok, err := c.dec.Token(); err != io.EOF {
		if err != nil {
			return c.decodeError(err)
		}
		return Errors{c.errorAt(extra, "Invalid JSON", fmt.Sprintf("Unexpected %v after the job object.", tok))}
	}
	if len(c.errs) > 0 {
		return c.errs
	}
	return nil
}

// decodeError places a JSON syntax or type error.
func (c *jsonChecker) decodeError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		// json.Unmarshal places syntax errors just past the offending
		// byte, more precisely than the token reader does.
		var v any
		if exact := json.Unmarshal(c.src, &v); errors.As(exact, &syn) && int(syn.Offset) < len(c.src) {
			return Errors{c.errorAt(int(syn.Offset)-1, "Invalid JSON", strings.TrimPrefix(syn.Error(), "json: "))}
		}
		if errors.As(err, &syn) && int(syn.Offset) < len(c.src) {
			return Errors{c.errorAt(int(syn.Offset), "Invalid JSON", strings.TrimPrefix(syn.Error(), "json: "))}
		}
		return Errors{c.errorAt(len(c.src), "Invalid JSON", "Unexpected end of input.")}
	case errors.As(err, &typ):
		off := int(typ.Offset)
		if start, ok := c.valueStart[off]; ok {
			off = start
		}
		return Errors{c.errorAt(off, "Invalid value", strings.TrimPrefix(typ.Error(), "json: "))}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return Errors{c.errorAt(len(c.src), "Invalid JSON", "Unexpected end of input.")}
	}
	return Errors{c.errorAt(int(c.dec.InputOffset()), "Invalid JSON", strings.TrimPrefix(err.Error(), "json: "))}
}

// nextStart is the offset of the next token: past whitespace, commas and
// colons from the decoder's position.
func (c *jsonChecker) nextStart() int {
	off := int(c.dec.InputOffset())
	for off < len(c.src) {
		switch c.src[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

func (c *jsonChecker) errorAt(offset int, summary, detail string) *Error {
	p := c.pos(offset)
	return &Error{Filename: c.filename, Line: p.Line, Column: p.Column, Summary: summary, Detail: detail}
}

// pos converts a byte offset into a 1-based line and column (in runes).
func (c *jsonChecker) pos(offset int) hcl.Pos {
	offset = max(0, min(offset, len(c.src)))
	before := c.src[:offset]
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return hcl.Pos{
		Line:   1 + bytes.Count(before, []byte("\n")),
		Column: 1 + utf8.RuneCount(before[lineStart:]),
		Byte:   offset,
	}
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

func typeOf(v any) reflect.Type { return reflect.TypeOf(v) }

// value walks one JSON value that decodes into t. A nil t accepts
// anything (interfaces, custom decoders, or a type mismatch that
// json.Unmarshal will report).
func (c *jsonChecker) value(t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && (t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType)) {
		t = nil
	}
	start := c.nextStart()
	tok, err := c.dec.Token()
	if err != nil {
		return err
	}
	c.valueStart[int(c.dec.InputOffset())] = start
	switch tok {
	case json.Delim('{'):
		return c.object(t, path)
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; c.dec.More(); i++ {
			if err := c.value(elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err := c.dec.Token() // ']'
		return err
	}
	return nil
}

// object walks the members of an object whose '{' was just read.
func (c *jsonChecker) object(t reflect.Type, path string) error {
	for c.dec.More() {
		keyStart := c.nextStart()
		tok, err := c.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		ft, known := memberType(t, key)
		if path == "" && strings.EqualFold(key, "Job") {
			c.jobOffset = c.nextStart()
		}
		if known {
			if err := c.value(ft, joinPath(path, key)); err != nil {
				return err
			}
			continue
		}
		var v any
		if err := c.dec.Decode(&v); err != nil {
			return err
		}
		where := path
		if where == "" {
			where = "the request"
		}
		switch nomadFieldVerdict(t, key, v) {
		case verdictOK:
			continue
		case verdictSameAsGroup:
			gc := groupCopy{offset: keyStart, path: where, key: key, value: v, group: -1}
			if m := groupIndex.FindAllStringSubmatch(path, -1); len(m) > 0 {
				gc.group, _ = strconv.Atoi(m[len(m)-1][1])
			}
			c.groupCopies = append(c.groupCopies, gc)
			continue
		case verdictUnsupported:
			c.errs = append(c.errs, c.errorAt(keyStart, "Unsupported field",
				fmt.Sprintf("%s: Nomad's field %q is not supported by Drover yet; remove it or leave it empty.", where, key)))
			continue
		}
		c.errs = append(c.errs, c.errorAt(keyStart, "Unknown field",
			fmt.Sprintf("%s has no field %q (neither Drover's nor Nomad's).", where, key)))
	}
	_, err := c.dec.Token() // '}'
	return err
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// memberType is the type an object member decodes into: a struct field
// matched the way encoding/json matches (exact name first, then
// case-insensitively), a map's element type, or nil (anything) when t is
// nil or not an object type.
func memberType(t reflect.Type, key string) (reflect.Type, bool) {
	if t == nil {
		return nil, true
	}
	switch t.Kind() {
	case reflect.Map:
		return t.Elem(), true
	case reflect.Struct:
	default:
		return nil, true
	}
	var folded reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("json"); ok {
			n, _, _ := strings.Cut(tag, ",")
			if n == "-" {
				continue
			}
			if n != "" {
				name = n
			}
		}
		if name == key {
			return f.Type, true
		}
		if folded == nil && strings.EqualFold(name, key) {
			folded = f.Type
		}
	}
	return folded, folded != nil
}

// isEmptyJSON reports whether a decoded value is null, false, 0, "", [] or
// {}: an unknown field holding it changes nothing and is ignored.
func isEmptyJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case json.Number:
		f, err := x.Float64()
		return err == nil && f == 0
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}
