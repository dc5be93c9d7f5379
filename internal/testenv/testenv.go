// Package testenv holds what the tests of many packages need from the
// machine and the repository, so each need is met one way: a test that
// needs the sandbox asks NeedSandbox (which CI turns from a skip into a
// failure), a fixture agent is loaded by name wherever the test lives,
// and a hand-written log is read by the recorder's own decoder.
//
// It imports only leaf packages (session, recorder, internal/spec,
// internal/sandbox), so the internal tests of the runner and of replay can
// use it; the in-process command line, which links everything, is in
// testcli.
package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agentctl/agentctl/internal/sandbox"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
)

// RequireSandboxEnv, set to anything, makes NeedSandbox fail instead of
// skip: CI has the namespaces, so a test that quietly skips there hides a
// broken sandbox.
const RequireSandboxEnv = "AGENTCTL_REQUIRE_SANDBOX"

// NeedSandbox skips t where the sandbox cannot confine (no user
// namespaces, not Linux), and fails it there when RequireSandboxEnv is set.
func NeedSandbox(t testing.TB) {
	t.Helper()
	err := sandbox.Available()
	if err == nil {
		return
	}
	if os.Getenv(RequireSandboxEnv) != "" {
		t.Fatalf("sandbox unavailable and %s is set: %v", RequireSandboxEnv, err)
	}
	t.Skipf("sandbox unavailable: %v", err)
}

// Root is the repository's root folder, found from this file, so a test
// names fixtures the same way at any depth of the tree.
func Root() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("testenv: no caller information")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Fixture is the path of a file below the repository's fixtures folder.
func Fixture(elem ...string) string {
	return filepath.Join(append([]string{Root(), "fixtures"}, elem...)...)
}

// LoadAgent loads fixtures/agents/<name>.yaml.
func LoadAgent(t testing.TB, name string) *spec.Spec {
	t.Helper()
	sp, err := spec.Load(Fixture("agents", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// ReadJSONL reads events written one a line, as `agentctl show --json`
// prints them or a log stores them, skipping blank lines; a line that
// does not decode fails t. Lines may be up to 16 MiB.
func ReadJSONL(t testing.TB, path string) []session.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []session.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		e, err := session.Decode(sc.Bytes())
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		evs = append(evs, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return evs
}

// ScriptedSpec writes a read-only agent spec named name whose scripted
// model plays turns (the YAML list of a model script's turns) over the
// typo workspace, and returns its path.
func ScriptedSpec(t testing.TB, name, turns string) string {
	t.Helper()
	dir := t.TempDir()
	model, specPath := filepath.Join(dir, "model.yaml"), filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(model, []byte("turns:\n"+turns), 0o644); err != nil {
		t.Fatal(err)
	}
	s := fmt.Sprintf("name: %s\nmodel: {provider: scripted, id: scripted-1, script: %s}\nprompt: \"Look at the workspace\"\nworkspace: {from: %s}\nmode: read-only\ntools: [read_file, list_files]\n",
		name, model, Fixture("workspaces", "typo"))
	if err := os.WriteFile(specPath, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return specPath
}
