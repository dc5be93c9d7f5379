package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// printer renders schema errors in English.
var printer = message.NewPrinter(language.English)

// schemas caches compiled schemas by their text, so each tool's schema is
// compiled once however many calls are validated.
var schemas sync.Map // string -> *jsonschema.Schema

// schemaURL names every schema given to the compiler; nothing is fetched.
const schemaURL = "https://agentctl.invalid/tools/args.json"

// Validate checks args against t's JSON Schema. The error wraps
// ErrInvalidArgs and is short enough to show the model, for example
// "tools: invalid arguments for edit_file: missing property 'new'" (the
// clauses are jsonschema's own wording). Empty args count as {}. Validate is
// safe for concurrent use.
func Validate(t Tool, args json.RawMessage) error {
	sch, err := compiled(t.Parameters())
	if err != nil {
		return fmt.Errorf("validate %s: schema: %w", t.Name(), err)
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return fmt.Errorf("%w for %s: not valid JSON: %v", ErrInvalidArgs, t.Name(), err)
	}
	if err := sch.Validate(v); err != nil {
		var verr *jsonschema.ValidationError
		if errors.As(err, &verr) {
			return fmt.Errorf("%w for %s: %s", ErrInvalidArgs, t.Name(), describe(verr))
		}
		return fmt.Errorf("%w for %s: %v", ErrInvalidArgs, t.Name(), err)
	}
	return nil
}

func compiled(params json.RawMessage) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(params)) == 0 {
		params = json.RawMessage(`{"type":"object"}`)
	}
	key := string(params)
	if s, ok := schemas.Load(key); ok {
		return s.(*jsonschema.Schema), nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, err
	}
	s, _ := schemas.LoadOrStore(key, sch)
	return s.(*jsonschema.Schema), nil
}

// describe flattens a validation error to its leaf causes, one clause each,
// sorted: "missing property 'new'" at the top level, "at /path: got number,
// want string" below it.
func describe(e *jsonschema.ValidationError) string {
	var leaves []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		msg := e.ErrorKind.LocalizedString(printer)
		if len(e.InstanceLocation) > 0 {
			msg = fmt.Sprintf("at /%s: %s", strings.Join(e.InstanceLocation, "/"), msg)
		}
		leaves = append(leaves, msg)
	}
	walk(e)
	sort.Strings(leaves)
	if len(leaves) == 0 {
		return e.Error()
	}
	return strings.Join(leaves, "; ")
}
