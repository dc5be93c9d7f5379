package view_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
)

// TestScriptModelNameIsGos holds the page script's pm, which names a
// provider and model in the browser, to session.ModelName, the rule every
// other output uses: the script is a second copy of that rule, run here
// under Node on the cases that differ.
func TestScriptModelNameIsGos(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (.ci/run installs it for the npm clients)")
	}
	src, err := os.ReadFile("assets/view.js")
	if err != nil {
		t.Fatal(err)
	}
	var fns string
	for _, name := range []string{"vis", "pm"} {
		m := regexp.MustCompile(`(?s)\n  function ` + name + `\(.*?\n  }\n`).Find(src)
		if m == nil {
			t.Fatalf("view.js has no function %s", name)
		}
		fns += string(m)
	}
	cases := [][2]string{{"anthropic", "claude-sonnet-4-5"}, {"cursor", ""}, {"", "gpt-4o"}, {"", ""}}
	in, _ := json.Marshal(cases)
	out, err := exec.Command(node, "-e", fns+"\nconsole.log(JSON.stringify("+string(in)+".map(c => pm(c[0], c[1]))))").CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got []string
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(cases) {
		t.Fatalf("node printed %s (%v)", out, err)
	}
	for i, c := range cases {
		if want := session.ModelName(c[0], c[1]); got[i] != want {
			t.Errorf("pm(%q, %q) = %q in the page, %q everywhere else", c[0], c[1], got[i], want)
		}
	}
}
