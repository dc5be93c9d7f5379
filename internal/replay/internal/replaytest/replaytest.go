// Package replaytest holds the test helpers package replay's tests and
// package internal/replay/check's share beyond internal/testenv's: recording a
// fixture agent with today's runner and importing a real transcript.
// The checks never link the runner; their tests do, because the case that
// matters most is a log today's runner just wrote.
package replaytest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/testenv"
	"github.com/agentctl/agentctl/internal/tools"
	"github.com/agentctl/agentctl/internal/transcript"
)

// FixedClock ticks 1 ms per reading from a fixed instant, so recorded
// sessions are the same on every run.
func FixedClock() func() time.Time {
	t := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Millisecond); return t }
}

// Tools builds the spec's registry as a run does (runner.SpecTools).
func Tools(t testing.TB, sp *spec.Spec) *tools.Registry {
	t.Helper()
	reg, err := runner.SpecTools(sp)
	if err != nil {
		t.Fatalf("the tools of %s: %v", sp.Name, err)
	}
	return reg
}

// Scripted builds the spec's scripted model.
func Scripted(t testing.TB, sp *spec.Spec) provider.Provider {
	t.Helper()
	s, err := provider.LoadScript(sp.Model.Script)
	if err != nil {
		t.Fatal(err)
	}
	return provider.NewScripted(s, sp.Model.ID)
}

// Record runs a fixture agent with its scripted model into home and
// returns the session's events.
func Record(t testing.TB, home, agent, id string) []session.Event {
	t.Helper()
	sp := testenv.LoadAgent(t, agent)
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
	ss, err := transcript.Import(transcript.FormatAuto, filepath.Join(testenv.Root(), "testdata", "corpus", "transcripts", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return ss[0].Events
}
