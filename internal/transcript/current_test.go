package transcript_test

import (
	"encoding/json"
	"math"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/transcript"
)

// jqNumber runs jq -s over file and returns its single number.
func jqNumber(t *testing.T, jq, file, filter string) float64 {
	t.Helper()
	out, err := exec.Command(jq, "-s", filter, file).Output()
	if err != nil {
		t.Fatalf("jq %q: %v", filter, err)
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		t.Fatalf("jq %q = %q", filter, out)
	}
	return n
}

// TestCurrentClaudeCodeAndCodex imports the transcripts Claude Code
// 2.1.328 and Codex 0.171.0 wrote (testdata/claude-code, testdata/codex;
// see the README there) with nothing lost (exit 0: their bookkeeping lines,
// api-request-shape, api-request, api-request-blob, tools-used,
// atis-latch, cost-state, token_usage_record, are read or skipped by
// name), and with the counts jq gives over the same file: responses,
// tool calls and results, tokens; Claude Code's system prompt and tool
// definitions from its api-request-shape, its own cost beside agentctl's.
// On main the bookkeeping lines were unknown_record notes (exit 8) and the
// header had no system prompt or tools.
func TestCurrentClaudeCodeAndCodex(t *testing.T) {
	jq := counter(t, "jq")
	for _, tt := range []struct {
		format, glob string
		// jq filters (over the slurped lines) of each count.
		want map[string]string
	}{
		{transcript.FormatClaudeCode, "testdata/claude-code/*.jsonl", map[string]string{
			"model_call":  `[.[] | select(.type == "assistant") | .message.id] | unique | length`,
			"tool_intent": `[.[] | select(.type == "assistant") | .message.content[]? | select(.type == "tool_use") | .id] | unique | length`,
			"tool_result": `[.[] | select(.type == "user") | .message.content | arrays | .[] | select(.type == "tool_result")] | length`,
			"input":       `[.[] | select(.type == "assistant")] | group_by(.message.id) | map(.[0].message.usage | .input_tokens + .cache_creation_input_tokens + .cache_read_input_tokens) | add`,
			"output":      `[.[] | select(.type == "assistant")] | group_by(.message.id) | map(.[0].message.usage.output_tokens) | add`,
			"tool_defs":   `[.[] | select(.type == "api-request-shape")][0].shape.tools | length`,
			"source_cost": `[.[] | select(.type == "cost-state")] | last | .totalCostUSD`,
		}},
		{transcript.FormatCodex, "testdata/codex/*.jsonl", map[string]string{
			"model_call":  `[.[] | select(.type == "event_msg" and .payload.type == "token_count" and .payload.info != null)] | length`,
			"tool_intent": `[.[] | select(.type == "response_item" and .payload.type == "function_call")] | length`,
			"tool_result": `[.[] | select(.type == "response_item" and .payload.type == "function_call_output")] | length`,
			"input":       `[.[] | select(.type == "event_msg" and .payload.type == "token_count" and .payload.info != null) | .payload.info.last_token_usage.input_tokens] | add`,
			"output":      `[.[] | select(.type == "event_msg" and .payload.type == "token_count" and .payload.info != null) | .payload.info.last_token_usage.output_tokens] | add`,
		}},
	} {
		files, _ := filepath.Glob(tt.glob)
		if len(files) == 0 {
			t.Fatalf("no %s", tt.glob)
		}
		for _, f := range files {
			t.Run(tt.format, func(t *testing.T) {
				if got, err := transcript.Detect(f); err != nil || got != tt.format {
					t.Fatalf("Detect = %q, %v", got, err)
				}
				ss, err := transcript.Import(transcript.FormatAuto, f)
				if err != nil {
					t.Fatal(err)
				}
				s := ss[0]
				if lost := transcript.Lost(s.Report); lost != 0 {
					t.Errorf("%d records not imported (the import would exit 8): %+v", lost, s.Report.Notes)
				}
				got := map[string]float64{}
				for _, e := range s.Events {
					got[string(e.Kind)]++
					if e.Kind == session.KindModelCall {
						got["input"] += float64(e.InputTokens)
						got["output"] += float64(e.OutputTokens)
					}
				}
				h := s.Events[0]
				var attrs struct {
					Defs        []json.RawMessage `json:"tool_definitions"`
					SourceCost  *float64          `json:"source_cost_usd"`
					NotRecorded []string          `json:"not_recorded"`
				}
				if err := json.Unmarshal(h.Attrs, &attrs); err != nil {
					t.Fatal(err)
				}
				got["tool_defs"] = float64(len(attrs.Defs))
				if attrs.SourceCost != nil {
					got["source_cost"] = *attrs.SourceCost
				}
				for k, filter := range tt.want {
					if w := jqNumber(t, jq, f, filter); math.Abs(got[k]-w) > 1e-9 {
						t.Errorf("%s = %v, jq counts %v", k, got[k], w)
					}
				}
				if tt.format == transcript.FormatClaudeCode {
					out, err := exec.Command(jq, "-s", "-r", `[.[] | select(.type == "api-request-shape")][0].shape.system | map(.text) | join("\n")`, f).Output()
					if err != nil {
						t.Fatal(err)
					}
					if want := strings.TrimSuffix(string(out), "\n"); h.System != want || want == "" {
						t.Errorf("system = %.80q…, want the api-request-shape's %.80q…", h.System, want)
					}
					for _, n := range attrs.NotRecorded {
						if n == "system prompt" || n == "tool definitions" {
							t.Errorf("not_recorded says %q though the api-request-shape has it", n)
						}
					}
				}
			})
		}
	}
}
