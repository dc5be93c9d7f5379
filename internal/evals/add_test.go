package evals

import (
	"testing"

	"gopkg.in/yaml.v3"
)

// TestAppendScenario: the scenario goes after the suite's last scenario,
// at the list's own indentation, and everything else of the file stays
// byte for byte: comments inside and after the list, a key after it,
// another indentation, a file without a final newline; a flow-style or
// empty list is rewritten into a block one (yaml.v3 keeps the comments).
func TestAppendScenario(t *testing.T) {
	sc := mapping("name", "new", "replay", mapping("home", "fixtures/abc", "session", "s1"))
	for _, tc := range []struct {
		name, in, want string
		line           int
	}{
		{
			name: "block list, comments kept",
			in: `# the suite
name: smoke
scenarios:
  - name: a # first
    agent: a.yaml
  # a comment between
  - name: b
    agent: b.yaml
# trailing comment
`,
			want: `# the suite
name: smoke
scenarios:
  - name: a # first
    agent: a.yaml
  # a comment between
  - name: b
    agent: b.yaml
  - name: new
    replay:
      home: fixtures/abc
      session: s1
# trailing comment
`,
			line: 9,
		},
		{
			name: "a key after the list",
			in: `scenarios:
- name: a
  agent: a.yaml

parallel: 2
`,
			want: `scenarios:
- name: a
  agent: a.yaml
- name: new
  replay:
    home: fixtures/abc
    session: s1

parallel: 2
`,
			line: 4,
		},
		{
			name: "wide indentation, no final newline",
			in:   "scenarios:\n    -   name: a\n        agent: a.yaml",
			want: "scenarios:\n    -   name: a\n        agent: a.yaml\n    -   name: new\n        replay:\n          home: fixtures/abc\n          session: s1\n",
			line: 4,
		},
		{
			name: "flow list",
			in:   "name: smoke # the name\nscenarios: [{name: a, agent: a.yaml}]\n",
			want: "name: smoke # the name\nscenarios:\n  - {name: a, agent: a.yaml}\n  - name: new\n    replay:\n      home: fixtures/abc\n      session: s1\n",
			line: 4,
		},
		{
			name: "empty list",
			in:   "name: smoke\nscenarios: []\n",
			want: "name: smoke\nscenarios:\n  - name: new\n    replay:\n      home: fixtures/abc\n      session: s1\n",
			line: 3,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, line, err := appendScenario([]byte(tc.in), sc)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
			if line != tc.line {
				t.Errorf("line %d, want %d", line, tc.line)
			}
			var v struct {
				Scenarios []map[string]any `yaml:"scenarios"`
			}
			if err := yaml.Unmarshal(got, &v); err != nil || len(v.Scenarios) == 0 || v.Scenarios[len(v.Scenarios)-1]["name"] != "new" {
				t.Errorf("the result does not end with the new scenario: %v %v", v.Scenarios, err)
			}
		})
	}
	for _, bad := range []string{"- a\n- b\n", "name: x\n", "scenarios: 3\n"} {
		if _, _, err := appendScenario([]byte(bad), sc); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
