package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// schemas caches compiled schemas by their text, so each tool's schema is
// compiled once however many calls are validated.
var schemas sync.Map // string -> *compiledSchema

// compiledSchema is a resolved schema and the same schema as plain JSON,
// in which describe looks up the keyword that failed.
type compiledSchema struct {
	rs  *jsonschema.Resolved
	doc any
	ids map[string]string // $id -> JSON Pointer; the library names such schemas by $id
}

// The $schema values the library validates; others are refused when the
// schema is compiled, not when a call is validated.
const (
	draft07    = "http://json-schema.org/draft-07/schema#"
	draft2020  = "https://json-schema.org/draft/2020-12/schema"
	validating = "validating "
)

// Validate checks args against t's JSON Schema. The error wraps
// ErrInvalidArgs and is short enough to show the model, for example
// "tools: invalid arguments for edit_file: missing property 'new'" or
// "tools: invalid arguments for bash: at /command: type: got integer, want
// string". Only the first error is reported; when several properties or
// items are invalid it is the one whose name sorts first (or the lowest
// index), so the same call always gets the same message. Empty args count
// as {}. Validate is safe for concurrent use.
//
// The library is github.com/google/jsonschema-go, not the design's
// github.com/santhosh-tekuri/jsonschema: santhosh's package compiles five
// draft meta-schemas in its init, 10-15 ms of CPU on every start of the
// binary whatever the command (every tool call in the sandbox and every
// 'agentctl query' paid it), where google's init takes about 1 ms; it is
// also what github.com/modelcontextprotocol/go-sdk uses. It knows draft
// 2020-12 and draft-07 only (another $schema is a schema error) and stops
// at the first error, which describe rewrites into the clause above.
func Validate(t Tool, args json.RawMessage) error {
	sch, err := compiled(t.Parameters())
	if err != nil {
		return fmt.Errorf("validate %s: schema: %w", t.Name(), err)
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	v, err := decodeJSON(args)
	if err != nil {
		return fmt.Errorf("%w for %s: not valid JSON: %v", ErrInvalidArgs, t.Name(), err)
	}
	if err := sch.rs.Validate(v); err != nil {
		return fmt.Errorf("%w for %s: %s", ErrInvalidArgs, t.Name(), sch.describe(v, err))
	}
	return nil
}

// decodeJSON decodes exactly one JSON value. Numbers become float64: the
// library takes json.Number for a string.
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the top-level value")
	}
	return v, nil
}

func compiled(params json.RawMessage) (*compiledSchema, error) {
	if len(bytes.TrimSpace(params)) == 0 {
		params = json.RawMessage(`{"type":"object"}`)
	}
	key := string(params)
	if s, ok := schemas.Load(key); ok {
		return s.(*compiledSchema), nil
	}
	doc, err := decodeJSON(params)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(params, &s); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			// The library's own message names its internal struct types.
			field := strings.ReplaceAll(te.Field, "schemaWithoutMethods.", "")
			return nil, fmt.Errorf("invalid value for %q: a JSON %s", strings.TrimPrefix(field, "."), te.Value)
		}
		return nil, err
	}
	if err := checkTypes(doc); err != nil {
		return nil, err
	}
	// The library knows each draft by one spelling of its URI.
	switch strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(s.Schema, "http://"), "https://"), "#") {
	case "":
	case "json-schema.org/draft-07/schema":
		s.Schema = draft07
	case "json-schema.org/draft/2020-12/schema":
		s.Schema = draft2020
	default:
		return nil, fmt.Errorf("unsupported $schema %q: want draft 2020-12 (%s) or draft-07 (%s), or no $schema", s.Schema, draft2020, draft07)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	cs := &compiledSchema{rs: rs, doc: doc}
	if strings.Contains(key, `"$id"`) {
		cs.ids = map[string]string{}
		collectIDs(doc, "", cs.ids)
	}
	c, _ := schemas.LoadOrStore(key, cs)
	return c.(*compiledSchema), nil
}

// chain splits a validation error into the schemas it passed through, from
// "root" down (JSON Pointers into the schema, or a schema's $id), and the
// failing keyword's own message. segs is nil if err is not such a chain.
func chain(err error) (segs []string, leaf string) {
	for {
		inner := errors.Unwrap(err)
		msg := err.Error()
		if inner == nil || !strings.HasPrefix(msg, validating) {
			return segs, msg
		}
		segs = append(segs, strings.TrimSuffix(msg, ": "+inner.Error())[len(validating):])
		err = inner
	}
}

// jsonTypes are the names "type" may use.
var jsonTypes = map[string]bool{"null": true, "boolean": true, "object": true, "array": true, "number": true, "string": true, "integer": true}

// checkTypes refuses a "type" that names no JSON type, which the library
// accepts (and then every call fails).
func checkTypes(v any) error {
	switch v := v.(type) {
	case map[string]any:
		names, _ := v["type"].([]any)
		if name, ok := v["type"].(string); ok {
			names = []any{name}
		}
		for _, n := range names {
			if name, _ := n.(string); !jsonTypes[name] {
				return fmt.Errorf("invalid value for \"type\": %q is not a JSON type", n)
			}
		}
		for k, x := range v {
			switch k {
			case "enum", "const", "default", "examples", "required", "dependentRequired":
				continue // values, not schemas
			case "properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies":
				m, _ := x.(map[string]any)
				for _, sub := range m { // names, then schemas
					if err := checkTypes(sub); err != nil {
						return err
					}
				}
				continue
			}
			if err := checkTypes(x); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range v {
			if err := checkTypes(x); err != nil {
				return err
			}
		}
	}
	return nil
}

// collectIDs records the JSON Pointer of every schema in v that has an $id.
func collectIDs(v any, ptr string, ids map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		if id, ok := v["$id"].(string); ok {
			ids[id] = ptr
			if ptr == "" {
				ids[id] = "root"
			}
		}
		for k, x := range v {
			switch k {
			case "enum", "const", "default", "examples":
				continue // values, not schemas
			}
			collectIDs(x, ptr+"/"+escape(k), ids)
		}
	case []any:
		for i, x := range v {
			collectIDs(x, ptr+"/"+strconv.Itoa(i), ids)
		}
	}
}

// chain is the package function chain with the schemas named by $id
// replaced by their JSON Pointers.
func (c *compiledSchema) chain(err error) (segs []string, leaf string) {
	segs, leaf = chain(err)
	for i, s := range segs {
		if p, ok := c.ids[s]; ok {
			segs[i] = p
		}
	}
	return segs, leaf
}

// step reports how the schema at child hangs below the one at parent: the
// keyword and, for properties, prefixItems, draft-07 items arrays and the
// like, its argument. ok is false for a jump through $ref.
func step(parent, child string) (kw, arg string, ok bool) {
	if parent == "root" {
		parent = ""
	}
	rest, found := strings.CutPrefix(child, parent+"/")
	if !found {
		return "", "", false
	}
	kw, arg, _ = strings.Cut(rest, "/")
	if strings.Contains(arg, "/") {
		return "", "", false
	}
	switch kw {
	case "properties", "patternProperties", "prefixItems", "allOf", "anyOf", "oneOf", "dependentSchemas", "dependencies":
		ok = arg != ""
	case "items":
		ok = true // a draft-07 array of schemas has an index
	case "additionalProperties", "unevaluatedProperties", "propertyNames", "additionalItems", "unevaluatedItems", "not", "if", "then", "else":
		ok = arg == ""
	}
	return kw, unescape(arg), ok
}

func unescape(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
}

func escape(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// describe turns the library's error for instance v into one clause,
// prefixed with the instance location when there is one. The library stops
// at the first error it meets, and it visits properties in map order; so
// where the chain descends into a property, an additional property or an
// array item, describe validates v again with only one candidate at that
// place, in name or index order, and reports the first that fails there.
func (c *compiledSchema) describe(v any, err error) string {
	segs, leaf := c.chain(err)
	if len(segs) == 0 {
		return firstLine(leaf)
	}
	var path []string
	cur, known := v, true
	// try validates v with the value at path replaced by x; it reports
	// whether that fails below segs[:i] through a schema accepted by want,
	// and if so adopts that failure.
	try := func(i int, x any, want func(kw, arg string) bool) bool {
		err := c.rs.Validate(replaceAt(v, path, x))
		if err == nil {
			return false
		}
		s, l := c.chain(err)
		if len(s) <= i || !slices.Equal(s[:i], segs[:i]) {
			return false
		}
		kw, arg, ok := step(s[i-1], s[i])
		if !ok || !want(kw, arg) {
			return false
		}
		segs, leaf = s, l
		return true
	}
	for i := 1; i < len(segs) && known; i++ {
		kw, arg, ok := step(segs[i-1], segs[i])
		if !ok {
			continue
		}
		switch kw {
		case "properties", "additionalProperties", "patternProperties", "unevaluatedProperties", "propertyNames":
			obj, isObj := cur.(map[string]any)
			if !isObj {
				known = false
				break
			}
			name := ""
			for _, k := range slices.Sorted(maps.Keys(obj)) {
				if kw == "properties" && k >= arg {
					break // arg itself fails; no need to try it
				}
				if try(i, map[string]any{k: obj[k]}, func(kw2, arg2 string) bool {
					return kw2 == kw && (kw != "properties" || arg2 == k)
				}) {
					name = k
					break
				}
			}
			if name == "" && kw == "properties" {
				name = arg
			}
			if name == "" {
				known = false
				break
			}
			path = append(path, name)
			cur = obj[name]
			if kw == "propertyNames" {
				cur = name
			}
		case "items", "prefixItems", "additionalItems", "unevaluatedItems":
			arr, isArr := cur.([]any)
			if !isArr {
				known = false
				break
			}
			idx := -1
			if arg != "" {
				idx, _ = strconv.Atoi(arg)
			} else {
				// The shortest prefix of the array that fails here ends with
				// the first item that fails.
				n := sort.Search(len(arr), func(n int) bool {
					return try(i, arr[:n+1], func(kw2, _ string) bool { return kw2 == kw })
				})
				if n < len(arr) && try(i, arr[:n+1], func(kw2, _ string) bool { return kw2 == kw }) {
					idx = n
				}
			}
			if idx < 0 || idx >= len(arr) {
				known = false
				break
			}
			path = append(path, strconv.Itoa(idx))
			cur = arr[idx]
		}
	}
	msg := clause(leaf, c.lookup(segs[len(segs)-1]), cur, known)
	if len(path) > 0 || !known {
		loc := ""
		for _, p := range path {
			loc += "/" + escape(p)
		}
		if !known {
			loc += "/…"
		}
		msg = "at " + loc + ": " + msg
	}
	return msg
}

// replaceAt returns v with the value at path replaced by x, copying the
// objects and arrays on the way.
func replaceAt(v any, path []string, x any) any {
	if len(path) == 0 {
		return x
	}
	switch v := v.(type) {
	case map[string]any:
		m := maps.Clone(v)
		m[path[0]] = replaceAt(v[path[0]], path[1:], x)
		return m
	case []any:
		i, err := strconv.Atoi(path[0])
		if err != nil || i < 0 || i >= len(v) {
			return v
		}
		s := slices.Clone(v)
		s[i] = replaceAt(v[i], path[1:], x)
		return s
	}
	return v
}

// lookup returns the schema at ptr ("root" or a JSON Pointer) as plain
// JSON, or nil.
func (c *compiledSchema) lookup(ptr string) any {
	if ptr == "root" {
		return c.doc
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil // a $id
	}
	cur := c.doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = unescape(tok)
		switch v := cur.(type) {
		case map[string]any:
			cur = v[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil
			}
			cur = v[i]
		default:
			return nil
		}
	}
	return cur
}

var (
	typeRE  = regexp.MustCompile(`has type "([a-z]+)", want (one of )?"([^"]*)"$`)
	namesRE = regexp.MustCompile(`\[("(?:[^"\\]|\\.)*"(?: "(?:[^"\\]|\\.)*")*)\]`)
	depRE   = regexp.MustCompile(`^dependentRequired\[("(?:[^"\\]|\\.)*")\]`)
)

// clause rewrites the library's message for one failing keyword; sch is the
// failing schema as plain JSON (or nil) and v the instance, if known.
func clause(leaf string, sch, v any, known bool) string {
	leaf = firstLine(leaf)
	kw, _, _ := strings.Cut(leaf, ": ")
	s, _ := sch.(map[string]any)
	got := func() string { b, _ := json.Marshal(v); return string(b) }
	num := func(name string) (string, bool) {
		f, ok := s[name].(float64)
		return strconv.FormatFloat(f, 'g', -1, 64), ok && known
	}
	switch {
	case strings.HasPrefix(leaf, "unexpected additional properties "):
		names := quotedNames(leaf)
		sort.Strings(names)
		return plural(names, "additional property", "additional properties") + " not allowed"
	case kw == "required":
		return "missing " + plural(quotedNames(leaf), "property", "properties")
	case strings.HasPrefix(kw, "dependentRequired["):
		m := depRE.FindStringSubmatch(kw)
		msg := "missing " + plural(quotedNames(strings.TrimPrefix(leaf, kw)), "property", "properties")
		if m != nil {
			if name, err := strconv.Unquote(m[1]); err == nil {
				msg += fmt.Sprintf(" (required with '%s')", name)
			}
		}
		return msg
	case kw == "type":
		if m := typeRE.FindStringSubmatch(leaf); m != nil {
			want := m[3]
			if m[2] != "" {
				want = "one of " + want
			}
			return fmt.Sprintf("type: got %s, want %s", m[1], want)
		}
	case kw == "enum":
		if vals, ok := s["enum"].([]any); ok && known {
			return fmt.Sprintf("enum: got %s, want one of %s", got(), jsonList(vals))
		}
	case kw == "const":
		if _, ok := s["const"]; ok && known {
			return fmt.Sprintf("const: got %s, want %s", got(), jsonList([]any{s["const"]}))
		}
	case kw == "minimum" || kw == "maximum" || kw == "exclusiveMinimum" || kw == "exclusiveMaximum" || kw == "multipleOf":
		if n, ok := num(kw); ok {
			want := map[string]string{"minimum": "at least ", "maximum": "at most ", "exclusiveMinimum": "more than ",
				"exclusiveMaximum": "less than ", "multipleOf": "a multiple of "}[kw]
			return fmt.Sprintf("%s: got %s, want %s%s", kw, got(), want, n)
		}
	case kw == "minLength" || kw == "maxLength":
		if str, isStr := v.(string); isStr {
			if n, ok := num(kw); ok {
				return fmt.Sprintf("%s: got %d characters, want %s %s", kw, utf8.RuneCountInString(str), bound(kw), n)
			}
		}
	case kw == "minItems" || kw == "maxItems":
		if arr, isArr := v.([]any); isArr {
			if n, ok := num(kw); ok {
				return fmt.Sprintf("%s: got %d items, want %s %s", kw, len(arr), bound(kw), n)
			}
		}
	case kw == "minProperties" || kw == "maxProperties":
		if obj, isObj := v.(map[string]any); isObj {
			if n, ok := num(kw); ok {
				return fmt.Sprintf("%s: got %d properties, want %s %s", kw, len(obj), bound(kw), n)
			}
		}
	case kw == "contains":
		return "contains: no item matches"
	case kw == "anyOf":
		return "anyOf: matches none of the alternatives"
	case kw == "oneOf":
		if strings.Contains(leaf, "validated against both") {
			return "oneOf: matches more than one alternative"
		}
		return "oneOf: matches none of the alternatives"
	case kw == "not":
		if sch == false {
			return "not allowed"
		}
		return "not: matches a schema it must not"
	}
	return leaf
}

func bound(kw string) string {
	if strings.HasPrefix(kw, "min") {
		return "at least"
	}
	return "at most"
}

// quotedNames returns the names in the first Go-quoted list ["a" "b"] in msg.
func quotedNames(msg string) []string {
	m := namesRE.FindStringSubmatch(msg)
	if m == nil {
		return nil
	}
	var names []string
	for rest := m[1]; rest != ""; rest = strings.TrimPrefix(rest, " ") {
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			break
		}
		name, _ := strconv.Unquote(q)
		names = append(names, name)
		rest = rest[len(q):]
	}
	return names
}

// plural renders names as "property 'a'" or "properties 'a', 'b'".
func plural(names []string, one, many string) string {
	if len(names) == 1 {
		return fmt.Sprintf("%s '%s'", one, names[0])
	}
	return fmt.Sprintf("%s '%s'", many, strings.Join(names, "', '"))
}

func jsonList(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		if f, ok := v.(float64); ok && !math.IsInf(f, 0) {
			parts[i] = strconv.FormatFloat(f, 'g', -1, 64)
			continue
		}
		b, _ := json.Marshal(v)
		parts[i] = string(b)
	}
	return strings.Join(parts, ", ")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
