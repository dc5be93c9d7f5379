package cli_test

import (
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/recorder/otlp"
	"github.com/agentctl/agentctl/internal/recorder/otlp/jaegertest"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
)

// TestOTLPSubagentNested: a run whose task call starts a subagent,
// exported live to a real Jaeger: the child's spans are in the parent's
// trace, its invoke_agent span a child of the parent's execute_tool span
// of the task call, its chats and tools under its own invoke_agent. An
// export of both logs afterwards adds nothing (same ids).
func TestOTLPSubagentNested(t *testing.T) {
	j := jaegertest.Start(t)
	setenv(t, j.Env("http/protobuf"))
	home := t.TempDir()
	const sid = "00000000000a5ab1"
	if code, _, stderr := agentctl(t, home, "run", fixture(t, "agents/delegate.yaml"), "-q", "--session-id", sid); code != 0 || stderr != "" {
		t.Fatalf("run exit %d, stderr %q", code, stderr)
	}
	childID := runner.SubagentID(runner.IdempotencyKey(sid, 3, 0, "task"))
	evs, _, err := recorder.Store{Root: home}.Load(childID)
	if err != nil || len(evs) == 0 || evs[0].ParentSessionID != sid {
		t.Fatalf("child %s: %d events, %v", childID, len(evs), err)
	}
	// parent: invoke_agent, 3 chats, 2 tools; child: invoke_agent, 2 chats, 1 tool: 10
	spans := j.WaitTrace(t, otlp.TraceID(sid).String(), 10)
	byName, byID := tree(t, spans)
	if len(byID) != 10 {
		t.Errorf("spans = %d, want 10 (names %v)", len(byID), keysOf(byName))
	}
	parents, kids := byName["invoke_agent delegate"], byName["invoke_agent reader"]
	if len(parents) != 1 || parents[0].Parent != "" || len(kids) != 1 {
		t.Fatalf("invoke_agent spans: delegate %d, reader %d; want one each, delegate the root", len(parents), len(kids))
	}
	tasks := byName["execute_tool task"]
	if len(tasks) != 1 || tasks[0].Parent != parents[0].SpanID {
		t.Fatalf("execute_tool task spans = %+v, want one under the parent's run", tasks)
	}
	kid := kids[0]
	if kid.Parent != tasks[0].SpanID {
		t.Errorf("the child's invoke_agent parent = %s, want the task call's execute_tool %s", kid.Parent, tasks[0].SpanID)
	}
	if tag(kid, "gen_ai.conversation.id") != childID || tag(kid, "agentctl.session.status") != string(session.StatusDone) {
		t.Errorf("child invoke_agent conversation %s status %s, want %s done", tag(kid, "gen_ai.conversation.id"), tag(kid, "agentctl.session.status"), childID)
	}
	if rf := byName["execute_tool read_file"]; len(rf) != 1 || rf[0].Parent != kid.SpanID {
		t.Errorf("the child's read_file = %+v, want one under the child's run", rf)
	}
	childChats := 0
	for _, c := range byName["chat scripted-1"] {
		if c.Parent == kid.SpanID {
			childChats++
		}
	}
	if childChats != 2 {
		t.Errorf("%d chats under the child's run, want 2", childChats)
	}
	if !kid.Start.After(tasks[0].Start) || kid.Start.Add(kid.Duration).After(tasks[0].Start.Add(tasks[0].Duration)) {
		t.Errorf("the child's run [%s +%s] is not inside the task call [%s +%s]", kid.Start, kid.Duration, tasks[0].Start, tasks[0].Duration)
	}

	// Exporting both logs again yields the same spans: nothing new.
	if code, _, stderr := agentctl(t, home, "export", "otlp", sid, childID); code != 0 {
		t.Fatalf("export exit %d: %s", code, stderr)
	}
	again := j.WaitTrace(t, otlp.TraceID(sid).String(), 10)
	if len(again) != len(spans) {
		t.Errorf("after export: %d spans, want %d (ids derive from the logs)", len(again), len(spans))
	}
}
