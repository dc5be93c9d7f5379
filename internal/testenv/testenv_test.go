package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRootIsTheModule: Root must name the folder of go.mod whatever the
// test's own folder, or every fixture path built on it is wrong.
func TestRootIsTheModule(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(Root(), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "module github.com/agentctl/agentctl\n"; string(b[:len(want)]) != want {
		t.Fatalf("go.mod at Root starts %q", b[:len(want)])
	}
	if sp := LoadAgent(t, "fix-typo"); sp.Name == "" {
		t.Fatalf("fixtures/agents/fix-typo.yaml loaded without a name")
	}
}
