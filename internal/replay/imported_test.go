package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/replay/internal/replaytest"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv"
	"github.com/agentctl/agentctl/internal/tools"
	"github.com/agentctl/agentctl/internal/transcript"
)

// TestRunImported replays imported sessions offline with no spec: the
// recorded turns stand in for the model and the recorded results for the
// tools, and the user's later prompts are given back once the turns
// before them are served, so every recorded turn is replayed and every
// result is the same.
func TestRunImported(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	for _, tt := range []struct {
		rel            string
		turns, results int
		status         string
	}{
		// 7 prompts, 12 responses, 10 calls (one failing: its error is
		// given back too); the prompt after the last turn is left out.
		{"claude-code/oneryalcin__fasthooks/sample_main_transcript.jsonl", 12, 10, "done"},
		// 5 steps, each one call; the run stopped after the last result
		// (submit), so the replay ends with the recording.
		{"swe-agent/SWE-agent__SWE-agent/6e44b9__sweagenttestrepo-1c2844.traj", 5, 5, StatusEndOfRecording},
	} {
		t.Run(tt.rel, func(t *testing.T) {
			evs := replaytest.ImportFile(t, tt.rel)
			rep, err := Run(context.Background(), RunConfig{Store: recorder.Store{Root: t.TempDir()}, SessionID: evs[0].SessionID,
				Events: evs, Spec: ImportedSpec(evs), Tools: RecordedTools(evs)})
			if err != nil {
				t.Fatal(err)
			}
			if rep.ReplayStatus != tt.status || rep.Turns != tt.turns || rep.RecordedTurns != tt.turns || rep.ToolResults != tt.results ||
				rep.Same != tt.results || len(rep.Differences) != 0 || rep.LogStatus != string(session.StatusImported) {
				t.Fatalf("Run = %+v", rep)
			}
		})
	}
}

// TestUnavailableTools: a fork of an imported session offers the tools
// its messages called, and each says it cannot run here.
func TestUnavailableTools(t *testing.T) {
	evs := replaytest.ImportFile(t, "claude-code/oneryalcin__fasthooks/sample_main_transcript.jsonl")
	reg := UnavailableTools(evs)
	if got := reg.Names(); len(got) != 3 || got[0] != "Bash" || got[1] != "Read" || got[2] != "Write" {
		t.Fatalf("tools = %v, want Bash, Read, Write", got)
	}
	b, _ := reg.Get("Bash")
	if r := b.Run(context.Background(), toolsCall()); r.Status != session.ResultError || b.SideEffects() {
		t.Errorf("Bash = %+v, side effects %v; want an error and none (a fork never re-applies it)", r, b.SideEffects())
	}
}

func toolsCall() tools.Call { return tools.Call{Args: []byte(`{"command":"ls"}`)} }

// TestImportedToolDefinitions: a Claude Code 2.1.3xx transcript's
// api-request-shape gives the imported session its system prompt and tool
// definitions, and a fork offers every one of those tools with the
// source's own description and schema (not only the tools the messages
// called, with an empty schema, as before).
func TestImportedToolDefinitions(t *testing.T) {
	file := filepath.Join(testenv.Root(), "internal", "transcript", "testdata", "claude-code", "c163f9eb-33cd-4625-99cd-077a9d4d3157.jsonl")
	ss, err := transcript.Import(transcript.FormatClaudeCode, file)
	if err != nil {
		t.Fatal(err)
	}
	evs := ss[0].Events
	// The shape, read from the file apart from the importer.
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var shape struct {
		System []struct {
			Text string `json:"text"`
		} `json:"system"`
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var l struct {
			Type  string          `json:"type"`
			Shape json.RawMessage `json:"shape"`
		}
		if json.Unmarshal(line, &l) == nil && l.Type == "api-request-shape" {
			if err := json.Unmarshal(l.Shape, &shape); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if len(shape.Tools) == 0 || len(shape.System) == 0 {
		t.Fatal("the file has no api-request-shape")
	}
	var sys []string
	for _, s := range shape.System {
		sys = append(sys, s.Text)
	}
	if sp := ImportedSpec(evs); sp.System != strings.Join(sys, "\n") {
		t.Errorf("the spec's system = %.60q…, want the shape's", sp.System)
	}
	reg := UnavailableTools(evs)
	if got := reg.Names(); len(got) != len(shape.Tools) {
		t.Fatalf("fork tools = %v, want the shape's %d", got, len(shape.Tools))
	}
	for _, want := range shape.Tools {
		tool, ok := reg.Get(want.Name)
		if !ok {
			t.Errorf("fork lacks %s", want.Name)
			continue
		}
		var got, exp any
		_ = json.Unmarshal(tool.Parameters(), &got)
		_ = json.Unmarshal(want.InputSchema, &exp)
		if tool.Description() != want.Description || !reflect.DeepEqual(got, exp) {
			t.Errorf("%s: description %.40q, schema %s; want the shape's", want.Name, tool.Description(), tool.Parameters())
		}
	}
	// Replay's stand-in for a called tool carries its definition too.
	read, ok := RecordedTools(evs).Get("Read")
	if !ok || !strings.Contains(string(read.Parameters()), "file_path") {
		t.Errorf("recorded Read has schema %v", read)
	}
}
