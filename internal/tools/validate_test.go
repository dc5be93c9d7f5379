package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		tool string
		args string
		want string // "" means valid
	}{
		{NameEditFile, `{"path":"a","old":"x","new":"y"}`, ""},
		{NameEditFile, `{"path":"a","old":"x"}`, `tools: invalid arguments for edit_file: missing property 'new'`},
		{NameEditFile, `{"path":"a"}`, `tools: invalid arguments for edit_file: missing properties 'old', 'new'`},
		{NameReadFile, `{"path":"a","mode":1}`, `tools: invalid arguments for read_file: additional property 'mode' not allowed`},
		{NameReadFile, `{}`, `tools: invalid arguments for read_file: missing property 'path'`},
		{NameReadFile, ``, `tools: invalid arguments for read_file: missing property 'path'`},
		{NameReadFile, `{"path":""}`, `tools: invalid arguments for read_file: at /path: minLength: got 0 characters, want at least 1`},
		{NameReadFile, `["a"]`, `tools: invalid arguments for read_file: type: got array, want object`},
		{NameBash, `{"command":5}`, `tools: invalid arguments for bash: at /command: type: got integer, want string`},
		{NameWriteFile, `{"path":true,"content":null}`, `tools: invalid arguments for write_file: at /content: type: got null, want string`},
		{NameWriteFile, `{"path":true,"content":"x"}`, `tools: invalid arguments for write_file: at /path: type: got boolean, want string`},
		{NameReadFile, `{"path":"a","zz":1,"mode":1}`, `tools: invalid arguments for read_file: additional properties 'mode', 'zz' not allowed`},
		{NameBash, `{"command":`, `tools: invalid arguments for bash: not valid JSON: unexpected EOF`},
		{NameBash, `{"command":"ls"} {}`, `tools: invalid arguments for bash: not valid JSON: unexpected data after the top-level value`},
		{NameListFiles, ``, ""},
		{NameListFiles, `{}`, ""},
		{NameGrep, `{"pattern":"x","path":"."}`, ""},
		{NameGrep, `{"path":"."}`, `tools: invalid arguments for grep: missing property 'pattern'`},
	}
	for _, tt := range tests {
		err := Validate(builtinTool(t, tt.tool), json.RawMessage(tt.args))
		got := ""
		if err != nil {
			got = err.Error()
			if !errors.Is(err, ErrInvalidArgs) {
				t.Errorf("Validate(%s, %s) = %v, not an ErrInvalidArgs", tt.tool, tt.args, err)
			}
		}
		if got != tt.want {
			t.Errorf("Validate(%s, %s) = %q, want %q", tt.tool, tt.args, got, tt.want)
		}
	}
}

func TestValidateCustomSchema(t *testing.T) {
	c := NewCommand(CommandDef{Name: "deploy", Command: []string{"true"}, Parameters: json.RawMessage(`{
		"type": "object",
		"properties": {"env": {"enum": ["staging", "prod"]}, "replicas": {"type": "integer", "minimum": 1}},
		"required": ["env"], "additionalProperties": false}`)})
	tests := []struct {
		args string
		want string
	}{
		{`{"env":"prod","replicas":2}`, ""},
		{`{"env":"dev"}`, `tools: invalid arguments for deploy: at /env: enum: got "dev", want one of "staging", "prod"`},
		{`{"env":"prod","replicas":0}`, `tools: invalid arguments for deploy: at /replicas: minimum: got 0, want at least 1`},
		{`{"env":"prod","replicas":1.5}`, `tools: invalid arguments for deploy: at /replicas: type: got number, want integer`},
	}
	for _, tt := range tests {
		got := ""
		if err := Validate(c, json.RawMessage(tt.args)); err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("Validate(deploy, %s) = %q, want %q", tt.args, got, tt.want)
		}
	}
	if err := Validate(c, json.RawMessage(`{"env":"prod","replicas":2,"x":1}`)); err == nil || err.Error() != `tools: invalid arguments for deploy: additional property 'x' not allowed` {
		t.Errorf("Validate(deploy, extra property) = %v", err)
	}
	if err := Validate(NewCommand(CommandDef{Name: "any"}), json.RawMessage(`{"whatever":1}`)); err != nil {
		t.Errorf("Validate against an empty schema = %v, want nil", err)
	}
	named := NewCommand(CommandDef{Name: "named", Parameters: json.RawMessage(`{"$schema": "http://json-schema.org/draft-07/schema#",
		"properties": {"type": {"type": "string"}, "kind": {}}, "dependencies": {"type": ["kind"]}}`)})
	if err := Validate(named, json.RawMessage(`{"type":"x"}`)); err == nil || err.Error() != `tools: invalid arguments for named: missing property 'kind' (required with 'type')` {
		t.Errorf("Validate(named) = %v", err)
	}
	for _, sch := range []string{`{"type": 5}`, `{"type": "strin"}`, `{"properties": {"a": {"minimum": "1"}}}`, `{"pattern": "("}`, `{"$ref": "#/$defs/none"}`, `{"type":`} {
		bad := NewCommand(CommandDef{Name: "bad", Parameters: json.RawMessage(sch)})
		if err := Validate(bad, json.RawMessage(`{}`)); err == nil || errors.Is(err, ErrInvalidArgs) || !strings.HasPrefix(err.Error(), "validate bad: schema: ") {
			t.Errorf("Validate against the broken schema %s = %v, want a schema error naming the tool that is not ErrInvalidArgs", sch, err)
		}
	}
}

// TestValidateDrafts checks draft 2020-12, draft-07 (with and without the
// trailing #) and no $schema, and that other drafts are refused clearly.
func TestValidateDrafts(t *testing.T) {
	const body = `"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]`
	for _, sch := range []string{
		``,
		`"$schema": "https://json-schema.org/draft/2020-12/schema",`,
		`"$schema": "https://json-schema.org/draft/2020-12/schema#",`,
		`"$schema": "http://json-schema.org/draft-07/schema#",`,
		`"$schema": "http://json-schema.org/draft-07/schema",`,
		`"$schema": "https://json-schema.org/draft-07/schema#",`,
	} {
		c := NewCommand(CommandDef{Name: "n", Parameters: json.RawMessage(`{` + sch + body + `}`)})
		if err := Validate(c, json.RawMessage(`{"n":1}`)); err != nil {
			t.Errorf("%s: valid args: %v", sch, err)
		}
		if err := Validate(c, json.RawMessage(`{"n":"1"}`)); err == nil || err.Error() != `tools: invalid arguments for n: at /n: type: got string, want integer` {
			t.Errorf("%s: invalid args: %v", sch, err)
		}
		if err := Validate(c, json.RawMessage(`{}`)); err == nil || err.Error() != `tools: invalid arguments for n: missing property 'n'` {
			t.Errorf("%s: missing n: %v", sch, err)
		}
	}
	for _, draft := range []string{"http://json-schema.org/draft-04/schema#", "https://json-schema.org/draft/2019-09/schema"} {
		c := NewCommand(CommandDef{Name: "old", Parameters: json.RawMessage(`{"$schema": "` + draft + `",` + body + `}`)})
		err := Validate(c, json.RawMessage(`{"n":1}`))
		want := `validate old: schema: unsupported $schema "` + draft + `": want draft 2020-12`
		if err == nil || errors.Is(err, ErrInvalidArgs) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Validate with $schema %s = %v, want %q...", draft, err, want)
		}
	}

	// Draft-07 tuples and definitions, and the index of the failing item.
	d7 := NewCommand(CommandDef{Name: "d7", Parameters: json.RawMessage(`{
		"$schema": "http://json-schema.org/draft-07/schema#",
		"type": "object",
		"properties": {
			"pair": {"type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "integer"}},
			"files": {"type": "array", "items": {"$ref": "#/definitions/file"}}
		},
		"definitions": {"file": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}}}}}`)})
	d2020 := NewCommand(CommandDef{Name: "d2020", Parameters: json.RawMessage(`{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type": "object",
		"properties": {
			"pair": {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}},
			"files": {"type": "array", "items": {"$ref": "#/$defs/file"}},
			"never": false,
			"either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
			"tag": {"type": "string", "pattern": "^v[0-9]+$"},
			"size": {"type": "number", "exclusiveMaximum": 10},
			"opts": {"type": "object", "additionalProperties": {"type": "boolean"}}
		},
		"$defs": {"file": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}}}}}`)})
	tests := []struct {
		tool Tool
		args string
		want string
	}{
		{d7, `{"pair":["a",1,2]}`, ""},
		{d7, `{"pair":[1]}`, `at /pair/0: type: got integer, want string`},
		{d7, `{"pair":["a",1,"b","c"]}`, `at /pair/2: type: got string, want integer`},
		{d7, `{"files":[{"name":"a"},{"name":"abcd"},{"name":5}]}`, `at /files/1/name: maxLength: got 4 characters, want at most 3`},
		{d2020, `{"pair":["a",1,2]}`, ""},
		{d2020, `{"pair":[1]}`, `at /pair/0: type: got integer, want string`},
		{d2020, `{"pair":["a",1,"b","c"]}`, `at /pair/2: type: got string, want integer`},
		{d2020, `{"files":[{"name":"a"},{"name":"abcd"},{"name":5}]}`, `at /files/1/name: maxLength: got 4 characters, want at most 3`},
		{d2020, `{"never":1}`, `at /never: not allowed`},
		{d2020, `{"either":[]}`, `at /either: anyOf: matches none of the alternatives`},
		{d2020, `{"tag":"1"}`, `at /tag: pattern: "1" does not match regular expression "^v[0-9]+$"`},
		{d2020, `{"size":10}`, `at /size: exclusiveMaximum: got 10, want less than 10`},
		{d2020, `{"opts":{"z":1,"a":true,"y":"x"}}`, `at /opts/y: type: got string, want boolean`},
		// Several invalid properties: the first by name, every time.
		{d2020, `{"tag":"x","size":11,"never":0,"either":null}`, `at /either: anyOf: matches none of the alternatives`},
		{d2020, `{"tag":"x","size":11,"never":0}`, `at /never: not allowed`},
	}
	for _, tt := range tests {
		for range 5 {
			got := ""
			if err := Validate(tt.tool, json.RawMessage(tt.args)); err != nil {
				got = strings.TrimPrefix(err.Error(), "tools: invalid arguments for "+tt.tool.Name()+": ")
			}
			if got != tt.want {
				t.Errorf("Validate(%s, %s) = %q, want %q", tt.tool.Name(), tt.args, got, tt.want)
				break
			}
		}
	}
}

func TestValidateConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := NewCommand(CommandDef{Name: "c", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`)})
			for range 50 {
				err := Validate(c, json.RawMessage(fmt.Sprintf(`{"b":%d,"a":%d}`, i, i)))
				if want := "tools: invalid arguments for c: at /a: type: got integer, want string"; err == nil || err.Error() != want {
					t.Errorf("Validate = %v, want %q", err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestValidateCompilesOnce(t *testing.T) {
	tool := builtinTool(t, NameGrep)
	if err := Validate(tool, json.RawMessage(`{"pattern":"x"}`)); err != nil {
		t.Fatal(err)
	}
	first, _ := schemas.Load(string(tool.Parameters()))
	if err := Validate(builtinTool(t, NameGrep), json.RawMessage(`{"pattern":"y"}`)); err != nil {
		t.Fatal(err)
	}
	second, _ := schemas.Load(string(tool.Parameters()))
	if first == nil || first != second {
		t.Errorf("schema cache: first %p, second %p; want the same compiled schema", first, second)
	}
}
