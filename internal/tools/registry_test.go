package tools

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestBuiltins(t *testing.T) {
	tests := []struct {
		mode    string
		names   []string
		want    []string
		wantErr error
		errText string
	}{
		{ModeReadOnly, nil, []string{"grep", "list_files", "read_file"}, nil, ""},
		{ModeWrite, nil, []string{"bash", "edit_file", "grep", "list_files", "read_file", "write_file"}, nil, ""},
		{ModeWrite, []string{"read_file", "bash"}, []string{"bash", "read_file"}, nil, ""},
		{ModeReadOnly, []string{"grep", "grep"}, []string{"grep"}, nil, ""},
		{ModeReadOnly, []string{"read_file", "write_file"}, nil, ErrMode,
			"tools: tool not offered in this mode: write_file (read-only mode offers grep, list_files, read_file)"},
		{ModeReadOnly, []string{"bash"}, nil, ErrMode,
			"tools: tool not offered in this mode: bash (read-only mode offers grep, list_files, read_file)"},
		{ModeWrite, []string{"rm"}, nil, ErrUnknownTool,
			`tools: unknown tool "rm" (known: bash, edit_file, grep, list_files, read_file, task, write_file)`},
		{ModeWrite, []string{"task"}, []string{"task"}, nil, ""},
		{ModeWrite, []string{"task", "read_file", "task"}, []string{"read_file", "task"}, nil, ""},
		{ModeReadOnly, []string{"task"}, nil, ErrMode,
			"tools: tool not offered in this mode: task (read-only mode offers grep, list_files, read_file)"},
		{"admin", nil, nil, nil, `tools: unknown mode "admin" (known: read-only, write)`},
	}
	for _, tt := range tests {
		reg, err := Builtins(tt.mode, tt.names)
		if tt.errText != "" {
			if err == nil || err.Error() != tt.errText || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Errorf("Builtins(%q, %q) = %v, want error %q", tt.mode, tt.names, err, tt.errText)
			}
			continue
		}
		if err != nil {
			t.Errorf("Builtins(%q, %q) = %v", tt.mode, tt.names, err)
			continue
		}
		if got := reg.Names(); !slices.Equal(got, tt.want) {
			t.Errorf("Builtins(%q, %q).Names() = %q, want %q", tt.mode, tt.names, got, tt.want)
		}
	}
}

func TestBuiltinDefinitions(t *testing.T) {
	reg, err := Builtins(ModeWrite, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantSide := map[string]bool{NameReadFile: false, NameListFiles: false, NameGrep: false, NameWriteFile: true, NameEditFile: true, NameBash: true}
	wantRequired := map[string][]string{
		NameReadFile: {"path"}, NameWriteFile: {"path", "content"}, NameEditFile: {"path", "old", "new"},
		NameListFiles: nil, NameGrep: {"pattern"}, NameBash: {"command"},
	}
	defs := reg.Defs()
	if len(defs) != len(wantSide) {
		t.Fatalf("Defs() has %d tools, want %d", len(defs), len(wantSide))
	}
	for i, d := range defs {
		if i > 0 && defs[i-1].Name >= d.Name {
			t.Errorf("Defs() not sorted: %s before %s", defs[i-1].Name, d.Name)
		}
		tool, _ := reg.Get(d.Name)
		if tool.SideEffects() != wantSide[d.Name] {
			t.Errorf("%s.SideEffects() = %v, want %v", d.Name, tool.SideEffects(), wantSide[d.Name])
		}
		if d.Description == "" {
			t.Errorf("%s has no description", d.Name)
		}
		var schema struct {
			Type                 string   `json:"type"`
			Required             []string `json:"required"`
			AdditionalProperties *bool    `json:"additionalProperties"`
		}
		if err := json.Unmarshal(d.Parameters, &schema); err != nil {
			t.Errorf("%s schema: %v", d.Name, err)
			continue
		}
		if schema.Type != "object" || schema.AdditionalProperties == nil || *schema.AdditionalProperties ||
			!slices.Equal(schema.Required, wantRequired[d.Name]) {
			t.Errorf("%s schema = %+v, want an object, additionalProperties false, required %q", d.Name, schema, wantRequired[d.Name])
		}
	}
	if _, ok := reg.Get("nope"); ok {
		t.Errorf(`Get("nope") found a tool`)
	}
}

func TestRegistryWith(t *testing.T) {
	reg, err := Builtins(ModeReadOnly, nil)
	if err != nil {
		t.Fatal(err)
	}
	deploy := NewCommand(CommandDef{Name: "deploy", Command: []string{"true"}})
	more, err := reg.With(deploy)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := more.Names(), []string{"deploy", "grep", "list_files", "read_file"}; !slices.Equal(got, want) {
		t.Errorf("With(deploy).Names() = %q, want %q", got, want)
	}
	if got := reg.Names(); len(got) != 3 {
		t.Errorf("With changed the original registry: %q", got)
	}
	if _, err := more.With(NewCommand(CommandDef{Name: "grep"})); err == nil || !strings.Contains(err.Error(), `"grep" registered twice`) {
		t.Errorf("With(a second grep) = %v, want a duplicate error", err)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("NewRegistry with duplicate names did not panic")
		}
	}()
	NewRegistry(deploy, deploy)
}

func TestCheckMode(t *testing.T) {
	ro, err := Builtins(ModeReadOnly, nil)
	if err != nil {
		t.Fatal(err)
	}
	write, err := Builtins(ModeWrite, nil)
	if err != nil {
		t.Fatal(err)
	}
	lookup := NewCommand(CommandDef{Name: "lookup_order", Command: []string{"true"}})
	email := NewCommand(CommandDef{Name: "send_email", Command: []string{"true"}, SideEffects: true})
	roLookup, _ := ro.With(lookup)
	roEmail, _ := ro.With(email, lookup)
	tests := []struct {
		mode string
		reg  *Registry
		want string // "" means accepted
	}{
		{ModeReadOnly, ro, ""},
		{ModeReadOnly, roLookup, ""},
		{ModeReadOnly, roEmail, "tool not offered in this mode: send_email has side effects"},
		{ModeReadOnly, write, "bash, edit_file, write_file have side effects"},
		{ModeWrite, roEmail, ""},
		{ModeWrite, write, ""},
	}
	for _, tt := range tests {
		err := CheckMode(tt.mode, tt.reg)
		if tt.want == "" && err != nil || tt.want != "" && (!errors.Is(err, ErrMode) || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("CheckMode(%s, %q) = %v, want %q", tt.mode, tt.reg.Names(), err, tt.want)
		}
	}
}
