package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/session"
)

const scriptYAML = `
summary: ""
turns:
  - text: "Let me look."
    tool_calls:
      - name: read_file
        args: {path: README.md, lines: [1, 2], opts: {follow: true, note: null}}
      - name: list_dir
  - text: "Done: the readme says hello."
    usage: {input_tokens: 120, output_tokens: 7}
  - error: "overloaded_error: Overloaded"
`

func loadScript(t *testing.T, src string) Script {
	t.Helper()
	var s Script
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("decode script: %v", err)
	}
	return s
}

func TestScriptYAML(t *testing.T) {
	s := loadScript(t, scriptYAML)
	if len(s.Turns) != 3 {
		t.Fatalf("turns = %d, want 3", len(s.Turns))
	}
	c := s.Turns[0].ToolCalls
	if len(c) != 2 || c[0].Name != "read_file" || c[1].Name != "list_dir" {
		t.Fatalf("tool calls = %+v", c)
	}
	// Key order of the YAML mapping is kept.
	if got, want := string(c[0].Args), `{"path":"README.md","lines":[1,2],"opts":{"follow":true,"note":null}}`; got != want {
		t.Errorf("args = %s, want %s", got, want)
	}
	if c[1].Args != nil {
		t.Errorf("args of a call without args = %s, want nil", c[1].Args)
	}
	if u := s.Turns[1].Usage; u == nil || u.InputTokens != 120 || u.OutputTokens != 7 {
		t.Errorf("usage = %+v", u)
	}
	var d ScriptTurn
	if err := yaml.Unmarshal([]byte("delay: 150ms\n"), &d); err != nil || d.Delay != 150*time.Millisecond {
		t.Errorf("delay = %v, %v; want 150ms", d.Delay, err)
	}
}

func TestScriptYAMLErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"turns:\n  - tool_calls:\n      - name: x\n        arg: {a: 1}\n", `line 4:9: tool call: unknown field "arg"`},
		{"turns:\n  - tool_calls:\n      - args: {a: 1}\n", "line 3:9: tool call: name is required"},
		{"turns:\n  - tool_calls:\n      - name: x\n        args: [1]\n", "line 4:15: args: want a mapping"},
		{"turns:\n  - tool_calls:\n      - name: x\n        args: not json\n", "line 4:15: args: want a mapping or a JSON object string"},
	}
	for _, tt := range tests {
		var s Script
		err := yaml.Unmarshal([]byte(tt.src), &s)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Unmarshal(%q) = %v, want error containing %q", tt.src, err, tt.want)
		}
	}
	var s Script
	if err := yaml.Unmarshal([]byte("turns:\n  - tool_calls:\n      - name: x\n        args: '{\"a\": 1}'\n"), &s); err != nil || string(s.Turns[0].ToolCalls[0].Args) != `{"a": 1}` {
		t.Errorf("JSON-string args = %s, %v", s.Turns[0].ToolCalls[0].Args, err)
	}
}

func TestScriptedTurns(t *testing.T) {
	m := NewScripted(loadScript(t, scriptYAML), "scripted-model")
	if m.Name() != "scripted" {
		t.Errorf("Name = %q", m.Name())
	}
	req := Request{Model: "scripted-model", Messages: []session.Message{
		{Role: session.RoleSystem, Content: "Be helpful."},         // 11 chars
		{Role: session.RoleUser, Content: "Summarise the README."}, // 21 chars
	}}
	var chunks []string
	got, err := m.Complete(context.Background(), req, func(d string) { chunks = append(chunks, d) })
	if err != nil {
		t.Fatal(err)
	}
	args0 := `{"path":"README.md","lines":[1,2],"opts":{"follow":true,"note":null}}`
	checkResponse(t, got, wantResp{
		text:  "Let me look.",
		calls: []session.ToolCall{call("call_1_0", "read_file", args0), call("call_1_1", "list_dir", `{}`)},
		// input: (11+21)/4+1 = 9; output: (12 + 69 + 2)/4+1 = 21
		in: 9, out: 21, finish: "tool_calls", model: "scripted-model",
	})
	if len(chunks) < 2 || strings.Join(chunks, "") != "Let me look." {
		t.Errorf("onText chunks = %q, want several pieces of the text", chunks)
	}
	if m.Turn() != 1 {
		t.Errorf("Turn() = %d, want 1", m.Turn())
	}

	// Compaction does not consume a turn.
	req.Messages = append(req.Messages,
		session.Message{Role: session.RoleAssistant, Content: "Let me look.", ToolCalls: got.ToolCalls},
		session.Message{Role: session.RoleTool, Content: strings.Repeat("x", 100), ToolCallID: "call_1_0"},
	)
	sum, err := m.Complete(context.Background(), Request{Messages: req.Messages, Purpose: PurposeCompaction}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantSum := "Summary of 3 messages: Summarise the README. | Let me look. | " + strings.Repeat("x", 80)
	if sum.Text != wantSum || sum.FinishReason != "stop" {
		t.Errorf("summary = %q (%s), want %q", sum.Text, sum.FinishReason, wantSum)
	}
	if m.Turn() != 1 {
		t.Errorf("Turn() after compaction = %d, want 1", m.Turn())
	}

	got, err = m.Complete(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkResponse(t, got, wantResp{text: "Done: the readme says hello.", in: 120, out: 7, finish: "stop", model: "scripted-model"})

	_, err = m.Complete(context.Background(), req, nil)
	checkError(t, err, &Error{Provider: "scripted", Type: "scripted_error", Message: "overloaded_error: Overloaded"})

	_, err = m.Complete(context.Background(), req, nil)
	const want = "scripted: the script has 3 turns and the run asked for turn 4; add turns or end the last one without tool calls"
	if err == nil || err.Error() != want || !errors.Is(err, ErrScriptExhausted) {
		t.Errorf("exhausted err = %v, want %q matching ErrScriptExhausted", err, want)
	}
	if m.Turn() != 3 {
		t.Errorf("Turn() = %d, want 3", m.Turn())
	}

	// Resume: SetTurn puts the counter back.
	m.SetTurn(1)
	got, err = m.Complete(context.Background(), req, nil)
	if err != nil || got.Text != "Done: the readme says hello." {
		t.Errorf("after SetTurn(1): %q, %v; want turn 2", got.Text, err)
	}
}

func TestScriptedSummaryFromScript(t *testing.T) {
	m := NewScripted(Script{Summary: "The user wants the README summarised."}, "gpt-4o")
	got, err := m.Complete(context.Background(), Request{Purpose: PurposeCompaction, Messages: []session.Message{{Role: session.RoleUser, Content: "hi"}}}, nil)
	if err != nil || got.Text != "The user wants the README summarised." {
		t.Errorf("summary = %q, %v", got.Text, err)
	}
	// A known model id is priced.
	if got.CostUSD != pricing.Cost("gpt-4o", got.InputTokens, got.OutputTokens) || got.CostUSD <= 0 {
		t.Errorf("CostUSD = %v", got.CostUSD)
	}
	// An empty script is exhausted at once, and says so in the singular-free form.
	_, err = m.Complete(context.Background(), Request{}, nil)
	if err == nil || err.Error() != "scripted: the script has 0 turns and the run asked for turn 1; add turns or end the last one without tool calls" {
		t.Errorf("err = %v", err)
	}
}

func TestScriptedCancelDuringDelay(t *testing.T) {
	m := NewScripted(Script{Turns: []ScriptTurn{{Text: "abcdefghij", Delay: time.Hour}}}, "m")
	ctx, cancel := context.WithCancel(context.Background())
	var seen strings.Builder
	got, err := m.Complete(ctx, Request{}, func(d string) {
		seen.WriteString(d)
		if seen.String() == "abcde" {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if got.Text != "abcde" || seen.String() != "abcde" {
		t.Errorf("partial = %q, onText saw %q; want the first half %q", got.Text, seen.String(), "abcde")
	}
	if m.Turn() != 0 {
		t.Errorf("Turn() = %d, want 0: a cancelled turn is served again", m.Turn())
	}
}

func TestScriptedDelayCompletes(t *testing.T) {
	m := NewScripted(Script{Turns: []ScriptTurn{{Text: "héllo wörld", Delay: 10 * time.Millisecond}}}, "m")
	start := time.Now()
	got, err := m.Complete(context.Background(), Request{}, nil)
	if err != nil || got.Text != "héllo wörld" {
		t.Fatalf("Complete = %q, %v", got.Text, err)
	}
	if d := time.Since(start); d < 10*time.Millisecond {
		t.Errorf("returned after %v, want at least the 10ms delay", d)
	}
	// No usage given: output (11 runes)/4+1 = 3, input 0/4+1 = 1.
	if got.InputTokens != 1 || got.OutputTokens != 3 {
		t.Errorf("usage = %d/%d, want 1/3", got.InputTokens, got.OutputTokens)
	}
}

// TestScriptArgsAliasBudget: args decoded straight from YAML (without the
// spec loader's document check) still cannot expand without bound.
func TestScriptArgsAliasBudget(t *testing.T) {
	var b strings.Builder
	b.WriteString("turns:\n  - tool_calls:\n      - name: bash\n        args:\n")
	b.WriteString("          a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 7; i++ {
		fmt.Fprintf(&b, "          a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", "))
	}
	b.WriteString("          command: *a6\n")
	var s Script
	err := yaml.Unmarshal([]byte(b.String()), &s)
	if err == nil || !strings.Contains(err.Error(), "excessive aliasing") {
		t.Fatalf("Unmarshal = %v, want an excessive aliasing error", err)
	}
}
