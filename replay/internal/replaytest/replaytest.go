// Package replaytest holds the test helpers package replay's tests and
// package replay/check's share: recording a fixture agent with today's
// runner, the repository's fixture paths and real imported transcripts.
// The checks never link the runner; their tests do, because the case that
// matters most is a log today's runner just wrote.
package replaytest

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/agentctl/agentctl/recorder"
	"github.com/agentctl/agentctl/runner"
	"github.com/agentctl/agentctl/runner/provider"
	"github.com/agentctl/agentctl/runner/spec"
	"github.com/agentctl/agentctl/runner/tools"
	"github.com/agentctl/agentctl/session"
	"github.com/agentctl/agentctl/transcript"
)

// root is the repository's root, found from this file's path, so the
// helpers work from replay's tests and replay/check's alike.
func root(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("replaytest: no caller information to find the repository root")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// repoPath joins elems to the repository's root.
func repoPath(t testing.TB, elems ...string) string {
	t.Helper()
	return filepath.Join(append([]string{root(t)}, elems...)...)
}

// FixedClock ticks 1 ms per reading from a fixed instant, so recorded
// sessions are the same on every run.
func FixedClock() func() time.Time {
	t := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Millisecond); return t }
}

// Tools builds the spec's registry as cli.buildTools does.
func Tools(t testing.TB, sp *spec.Spec) *tools.Registry {
	t.Helper()
	reg, err := tools.Builtins(sp.Mode, sp.Tools)
	if err != nil {
		t.Fatal(err)
	}
	var all []tools.Tool
	for _, n := range reg.Names() {
		tl, _ := reg.Get(n)
		all = append(all, tl)
	}
	for _, c := range sp.CustomTools {
		all = append(all, tools.NewCommand(tools.CommandDef{Name: c.Name, Description: c.Description, Parameters: c.Parameters,
			Command: c.Command, SideEffects: c.SideEffects, Idempotent: c.Idempotent, Lookup: c.Lookup, Dir: sp.Dir}))
	}
	return tools.NewRegistry(all...)
}

// LoadAgent loads fixtures/agents/<name>.yaml.
func LoadAgent(t testing.TB, name string) *spec.Spec {
	t.Helper()
	sp, err := spec.Load(repoPath(t, "fixtures", "agents", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// Scripted builds the spec's scripted model.
func Scripted(t testing.TB, sp *spec.Spec) provider.Provider {
	t.Helper()
	s, err := spec.LoadScript(sp.Model.Script)
	if err != nil {
		t.Fatal(err)
	}
	return provider.NewScripted(s, sp.Model.ID)
}

// Record runs a fixture agent with its scripted model into home and
// returns the session's events.
func Record(t testing.TB, home, agent, id string) []session.Event {
	t.Helper()
	sp := LoadAgent(t, agent)
	st := recorder.Store{Root: home}
	res, err := runner.Start(context.Background(), runner.Config{Spec: sp, Store: st, Provider: Scripted(t, sp),
		Tools: Tools(t, sp), Clock: FixedClock(), SessionID: id})
	if err != nil {
		t.Fatalf("record %s: %v", agent, err)
	}
	if res.Err != nil {
		t.Fatalf("record %s: %v", agent, res.Err)
	}
	evs, _, err := st.Load(id)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// ImportFile imports a real transcript of the repository's corpus
// (testdata/corpus/transcripts, byte for byte).
func ImportFile(t testing.TB, rel string) []session.Event {
	t.Helper()
	ss, err := transcript.Import(transcript.FormatAuto, repoPath(t, "testdata", "corpus", "transcripts", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return ss[0].Events
}
