package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/redact"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/tools"
)

// TestRedactionMidRun: a .env the agent writes mid-run is redacted from
// the events after it (the call that wrote it ran with the real value),
// and a .env over redact.MaxDotEnv is reported by an error event before
// the next events, once, not skipped in silence.
func TestRedactionMidRun(t *testing.T) {
	const secret = "written-by-the-agent-77"
	big := "BIG_TOKEN=" + strings.Repeat("b", redact.MaxDotEnv)
	args := func(path, content string) json.RawMessage {
		b, _ := json.Marshal(map[string]string{"path": path, "content": content})
		return b
	}
	script := provider.Script{Turns: []provider.ScriptTurn{
		{Text: "writing", ToolCalls: []provider.ScriptCall{{Name: "write_file", Args: args(".env", "AGENT_SECRET="+secret+"\n")}}},
		{Text: "now " + secret, ToolCalls: []provider.ScriptCall{{Name: "write_file", Args: args(".env.big", big)}}},
		{Text: "again " + secret},
	}}
	reg, err := tools.Builtins("write", []string{"write_file"})
	if err != nil {
		t.Fatal(err)
	}
	sp := &spec.Spec{Name: "mid-run", Model: spec.Model{Provider: "scripted", ID: "scripted-1", MaxTokens: 1 << 20}, // the big .env is one long call
		Prompt: "go", Mode: "write", MaxTurns: 10, Compaction: spec.Compaction{Window: 1 << 30, Threshold: 0.75}}
	store := recorder.Store{Root: t.TempDir()}
	res, err := Start(context.Background(), Config{Spec: sp, Store: store, Provider: provider.NewScripted(script, "scripted-1"), Tools: reg, SessionID: "aa00000000000001"})
	if err != nil || res.Status != session.StatusDone {
		t.Fatalf("Start = %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(store.SessionDir(res.SessionID), "workspace", ".env")); !strings.Contains(string(b), secret) {
		t.Errorf("write_file did not run with the model's content: %q", b)
	}
	evs, _, err := store.Load(res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	problems := 0
	for _, e := range evs {
		j, _ := session.Encode(e)
		if e.Seq > 5 && strings.Contains(string(j), secret) { // 3 and 5: the call that wrote it, before it ran
			t.Errorf("seq %d holds the secret: %s", e.Seq, j)
		}
		if e.Kind == session.KindError && e.Reason == ReasonRedactionIncomplete {
			problems++
			if !strings.Contains(e.Error, ".env.big") {
				t.Errorf("the error does not name the file: %s", e.Error)
			}
		}
	}
	if problems != 1 {
		t.Errorf("%d redaction_incomplete errors, want 1", problems)
	}
}
