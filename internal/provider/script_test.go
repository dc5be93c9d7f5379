package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// laughs is a script whose one tool call's args expand to 10^depth nodes
// through nested aliases ("billion laughs"), all anchored inside the args.
func laughs(depth int) string {
	var b strings.Builder
	b.WriteString("turns:\n  - tool_calls:\n      - name: bash\n        args:\n")
	b.WriteString("          a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < depth; i++ {
		fmt.Fprintf(&b, "          a%d: &a%d [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	fmt.Fprintf(&b, "          command: *a%d\n", depth-1)
	return b.String()
}

func TestLoadScriptRefusesExcessiveAliasing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(path, []byte(laughs(7)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadScript(path)
	if err == nil || !strings.Contains(err.Error(), "excessive aliasing") || !strings.Contains(err.Error(), path) {
		t.Fatalf("LoadScript(depth 7) = %v, want an excessive aliasing error naming the file", err)
	}
	// A few aliases stay fine: depth 2 is 100 nodes.
	if err := os.WriteFile(path, []byte(laughs(2)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadScript(path); err != nil {
		t.Fatalf("LoadScript(depth 2) = %v", err)
	}
}
