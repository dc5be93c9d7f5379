package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// jsonsame A.json B.json KEY...: A and B are JSON arrays of objects with
// the same values under each KEY, row by row (numbers as numbers), so a
// script can hold one command's figures to another's (sessions --json to
// query --format json). A row missing a key fails, as does an empty A.
func jsonSame(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 3 {
		ts.Fatalf("usage: jsonsame A.json B.json KEY...")
	}
	rows := func(name string) []map[string]any {
		b, err := os.ReadFile(ts.MkAbs(name))
		ts.Check(err)
		var out []map[string]any
		if err := json.Unmarshal(b, &out); err != nil {
			ts.Fatalf("%s: %v", name, err)
		}
		return out
	}
	a, b := rows(args[0]), rows(args[1])
	pick := func(rs []map[string]any, name string) string {
		var lines []string
		for i, r := range rs {
			var vals []string
			for _, k := range args[2:] {
				v, ok := r[k]
				if !ok {
					ts.Fatalf("%s: row %d has no %q", name, i, k)
				}
				j, _ := json.Marshal(v)
				vals = append(vals, k+"="+string(j))
			}
			lines = append(lines, strings.Join(vals, " "))
		}
		return strings.Join(lines, "\n")
	}
	ga, gb := pick(a, args[0]), pick(b, args[1])
	same := len(a) > 0 && ga == gb
	if same == neg {
		ts.Fatalf("%s:\n%s\n%s:\n%s", args[0], ga, args[1], gb)
	}
	fmt.Fprintf(ts.Stdout(), "%d rows agree\n", len(a))
}
