package tools

import (
	"encoding/json"
	"errors"
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
		{NameReadFile, `{"path":"a","mode":1}`, `tools: invalid arguments for read_file: additional properties 'mode' not allowed`},
		{NameReadFile, `{}`, `tools: invalid arguments for read_file: missing property 'path'`},
		{NameReadFile, ``, `tools: invalid arguments for read_file: missing property 'path'`},
		{NameReadFile, `{"path":""}`, `tools: invalid arguments for read_file: at /path: minLength: got 0, want 1`},
		{NameReadFile, `["a"]`, `tools: invalid arguments for read_file: got array, want object`},
		{NameBash, `{"command":5}`, `tools: invalid arguments for bash: at /command: got number, want string`},
		{NameWriteFile, `{"path":true,"content":null}`, `tools: invalid arguments for write_file: at /content: got null, want string; at /path: got boolean, want string`},
		{NameBash, `{"command":`, `tools: invalid arguments for bash: not valid JSON: unexpected EOF`},
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
		{`{"env":"dev"}`, `tools: invalid arguments for deploy: at /env: value must be one of 'staging', 'prod'`},
		{`{"env":"prod","replicas":0}`, `tools: invalid arguments for deploy: at /replicas: minimum: got 0, want 1`},
		{`{"env":"prod","replicas":1.5}`, `tools: invalid arguments for deploy: at /replicas: got number, want integer`},
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
	if err := Validate(NewCommand(CommandDef{Name: "any"}), json.RawMessage(`{"whatever":1}`)); err != nil {
		t.Errorf("Validate against an empty schema = %v, want nil", err)
	}
	bad := NewCommand(CommandDef{Name: "bad", Parameters: json.RawMessage(`{"type": 5}`)})
	if err := Validate(bad, json.RawMessage(`{}`)); err == nil || errors.Is(err, ErrInvalidArgs) {
		t.Errorf("Validate against a broken schema = %v, want a schema error that is not ErrInvalidArgs", err)
	}
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
