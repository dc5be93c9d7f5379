package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/tools"
)

// TestReadOnlyRefusesSideEffects: whatever built the registry (a spec on
// disk, a session header on resume or fork, an eval), Start and Resume
// refuse a read-only run that offers a tool with side effects before
// anything is recorded or run.
func TestReadOnlyRefusesSideEffects(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	outbox := filepath.Join(ws, ".outbox")
	files := map[string]string{
		"agent.yaml": "name: ro\nmodel: {provider: scripted, id: scripted-1, script: model.yaml}\nprompt: review\n" +
			"workspace: {path: ws}\nmode: read-only\napprovals: [{tool: read_file}]\n",
		"model.yaml": "turns:\n  - text: reading\n    tool_calls:\n      - {name: read_file, args: {path: a.txt}}\n  - text: done\n",
		"ws/a.txt":   "a\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sp, err := spec.Load(filepath.Join(dir, "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := provider.LoadScript(sp.Model.Script)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := tools.Builtins(tools.ModeReadOnly, nil)
	if err != nil {
		t.Fatal(err)
	}
	sendEmail := tools.NewCommand(tools.CommandDef{Name: "send_email", SideEffects: true,
		Command: []string{"sh", "-c", "mkdir -p .outbox && cat >> .outbox/sent"}})
	withEmail, err := ro.With(sendEmail)
	if err != nil {
		t.Fatal(err)
	}

	store := recorder.Store{Root: filepath.Join(dir, "home")}
	_, err = Start(context.Background(), Config{Spec: sp, Store: store, Provider: provider.NewScripted(script, sp.Model.ID), Tools: withEmail})
	if !errors.Is(err, tools.ErrMode) || !strings.Contains(err.Error(), "send_email has side effects") {
		t.Errorf("Start(read-only with send_email) = %v, want an ErrMode naming send_email", err)
	}
	if _, err := os.Stat(filepath.Join(store.Root, "sessions")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Start recorded something: %v", err)
	}

	// A session that stops awaiting approval, then a resume whose
	// registry brings back a side-effecting tool.
	res, err := Start(context.Background(), Config{Spec: sp, Store: store, Provider: provider.NewScripted(script, sp.Model.ID), Tools: ro})
	if err != nil || res.Status != session.StatusAwaitingApproval {
		t.Fatalf("Start(read-only) = %+v, %v; want awaiting_approval", res, err)
	}
	before, _, err := store.Load(res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Resume(context.Background(), Config{Spec: sp, Store: store, Provider: provider.NewScripted(script, sp.Model.ID), Tools: withEmail}, res.SessionID)
	if !errors.Is(err, tools.ErrMode) {
		t.Errorf("Resume(read-only with send_email) = %v, want ErrMode", err)
	}
	after, _, err := store.Load(res.SessionID)
	if err != nil || len(after) != len(before) {
		t.Errorf("a refused Resume appended to the log: %d events, then %d (%v)", len(before), len(after), err)
	}
	if _, err := os.Stat(outbox); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("send_email ran: %v", err)
	}
}
