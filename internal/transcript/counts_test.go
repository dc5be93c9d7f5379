package transcript

import (
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
)

// importCount is what a test counts of an imported session, to compare
// with an independent count of its source (jq over the file; the keys of
// jq's object are these fields' names).
type importCount struct {
	User, Assistant, Calls, Results, Errors int
	Input, Output, Cached                   int64
}

func countOf(x *Session) importCount {
	var c importCount
	for _, e := range x.Events {
		switch e.Kind {
		case session.KindUserMessage:
			c.User++
		case session.KindAssistantMessage:
			c.Assistant++
			c.Calls += len(e.ToolCalls)
		case session.KindToolResult:
			c.Results++
			if e.Status == session.ResultError {
				c.Errors++
			}
		case session.KindModelCall:
			c.Input += e.InputTokens
			c.Output += e.OutputTokens
			c.Cached += e.CacheReadInputTokens
		}
	}
	return c
}

// checkImport imports path, which Detect must call format, with
// wantChildren sub-agents, and compares each session (the main one and
// each child) with jq's count of the file: jqArgs gives jq's arguments
// for a session (its program and the file). It returns the main session.
func checkImport(t *testing.T, path, format string, wantChildren int, jqArgs func(x *Session) []string) *Session {
	t.Helper()
	if f, err := Detect(path); err != nil || f != format {
		t.Fatalf("Detect(%s) = %q, %v; want %s", path, f, err, format)
	}
	ss, err := Import(FormatAuto, path)
	if err != nil {
		t.Fatal(err)
	}
	s := ss[0]
	if len(s.Children) != wantChildren {
		t.Fatalf("%d sub-agents, want %d", len(s.Children), wantChildren)
	}
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Skip("jq is not installed; the independent count needs it")
	}
	for _, x := range All(ss) {
		if Lost(x.Report) != 0 {
			t.Errorf("lost records: %+v", x.Report.Notes)
		}
		args := jqArgs(x)
		out, err := exec.Command(jq, args...).Output()
		if err != nil {
			t.Fatalf("jq %v: %v", args, err)
		}
		var want importCount
		if err := json.Unmarshal(out, &want); err != nil {
			t.Fatal(err)
		}
		if got := countOf(x); got != want {
			t.Errorf("%s (jq %v): imported %+v; jq counts %+v", path, args[:len(args)-2], got, want)
		}
	}
	return s
}
