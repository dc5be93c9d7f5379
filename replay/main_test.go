package replay

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/recorder"
	"github.com/agentctl/agentctl/runner"
	"github.com/agentctl/agentctl/runner/provider"
	"github.com/agentctl/agentctl/runner/sandbox"
	"github.com/agentctl/agentctl/runner/spec"
	"github.com/agentctl/agentctl/runner/tools"
	"github.com/agentctl/agentctl/session"
)

var update = flag.Bool("update", false, "rewrite golden files and recorded fixtures under testdata/")

// TestMain lets this test binary host the sandbox: bash, custom tools and
// done checks re-execute it as the sandbox's init.
func TestMain(m *testing.M) {
	sandbox.Init()
	os.Exit(m.Run())
}

// fixedClock ticks 1 ms per reading from a fixed instant, so recorded
// sessions are the same on every run.
func fixedClock() func() time.Time {
	t := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Millisecond); return t }
}

// testTools builds the spec's registry as cli.buildTools does.
func testTools(t testing.TB, sp *spec.Spec) *tools.Registry {
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

// loadAgent loads fixtures/agents/<name>.yaml.
func loadAgent(t testing.TB, name string) *spec.Spec {
	t.Helper()
	sp, err := spec.Load(filepath.Join("..", "fixtures", "agents", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// scripted builds the spec's scripted model.
func scripted(t testing.TB, sp *spec.Spec) provider.Provider {
	t.Helper()
	s, err := spec.LoadScript(sp.Model.Script)
	if err != nil {
		t.Fatal(err)
	}
	return provider.NewScripted(s, sp.Model.ID)
}

// record runs a fixture agent with its scripted model into home and
// returns the session's events.
func record(t testing.TB, home, agent, id string) []session.Event {
	t.Helper()
	sp := loadAgent(t, agent)
	st := recorder.Store{Root: home}
	res, err := runner.Start(context.Background(), runner.Config{Spec: sp, Store: st, Provider: scripted(t, sp),
		Tools: testTools(t, sp), Clock: fixedClock(), SessionID: id})
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
