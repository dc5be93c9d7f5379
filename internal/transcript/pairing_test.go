package transcript_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/transcript"
)

// TestOpenHandsFinishIsTheEnd: OpenHands's finish call (AgentFinishAction)
// is the agent's end, which no observation answers. The import makes it
// the final text of its response, not a call, so every call it does emit
// has its result (an offline replay of the import finds no difference)
// and the counts are those of the source's other calls, read here from the
// raw JSON.
func TestOpenHandsFinishIsTheEnd(t *testing.T) {
	for _, f := range []string{
		"openhands/All-Hands-AI__OpenHands/basic.json",
		"openhands/All-Hands-AI__OpenHands/wrong_initial_state.json",
	} {
		t.Run(f, func(t *testing.T) {
			b, err := os.ReadFile(tr(f))
			if err != nil {
				t.Fatal(err)
			}
			var raw []struct {
				ID          int64           `json:"id"`
				Action      string          `json:"action"`
				Observation string          `json:"observation"`
				Cause       *int64          `json:"cause"`
				Meta        json.RawMessage `json:"tool_call_metadata"`
			}
			if err := json.Unmarshal(b, &raw); err != nil {
				t.Fatal(err)
			}
			type meta struct {
				ToolCallID    string `json:"tool_call_id"`
				ModelResponse struct {
					Choices []struct {
						Message struct {
							Content string `json:"content"`
						} `json:"message"`
					} `json:"choices"`
				} `json:"model_response"`
			}
			calls, answered := map[int64]bool{}, 0
			var finish []meta
			for _, e := range raw {
				switch {
				case e.Action == "finish" && len(e.Meta) > 0:
					var m meta
					if err := json.Unmarshal(e.Meta, &m); err != nil {
						t.Fatal(err)
					}
					finish = append(finish, m)
				case e.Action != "" && len(e.Meta) > 0 && string(e.Meta) != "null":
					calls[e.ID] = true
				case e.Observation != "" && e.Cause != nil && calls[*e.Cause]:
					answered++
				}
			}
			if len(finish) != 1 {
				t.Fatalf("the source has %d finish calls; the test wants a file with one", len(finish))
			}
			ss, err := transcript.Import(transcript.FormatOpenHands, tr(f))
			if err != nil {
				t.Fatal(err)
			}
			s := ss[0]
			emitted := 0
			var last session.Event
			for _, e := range s.Events {
				if e.Kind == session.KindAssistantMessage {
					emitted += len(e.ToolCalls)
					last = e
					for _, c := range e.ToolCalls {
						if c.ID == finish[0].ToolCallID {
							t.Errorf("the finish call %s is emitted as a tool call", c.ID)
						}
					}
				}
			}
			if emitted != len(calls) || s.Report.Counts[string(session.KindToolResult)] != answered {
				t.Errorf("%d calls and %d results imported; the source has %d calls besides finish and %d observations answering them",
					emitted, s.Report.Counts[string(session.KindToolResult)], len(calls), answered)
			}
			for _, c := range session.Fold(s.Events).Calls {
				if c.ResultSeq == 0 {
					t.Errorf("call %s (%s) has no result", c.ID, c.Tool)
				}
			}
			for _, n := range s.Report.Notes {
				if n.Code == transcript.CodeNoResult {
					t.Errorf("note %+v", n)
				}
			}
			// The finish's message is the session's final text, and the
			// call is kept with it.
			if want := finish[0].ModelResponse.Choices[0].Message.Content; last.Text != want {
				t.Errorf("final text %q, want the finish's message %q", last.Text, want)
			}
			var attrs struct {
				Finish session.ToolCall `json:"finish_call"`
			}
			if err := json.Unmarshal(last.Attrs, &attrs); err != nil || attrs.Finish.ID != finish[0].ToolCallID || attrs.Finish.Name != "finish" {
				t.Errorf("final message attrs %s (%v): want the finish call %s", last.Attrs, err, finish[0].ToolCallID)
			}
			if got := session.Fold(s.Events).SourceStatus; got != "finish" {
				t.Errorf("source_status %q, want finish", got)
			}
		})
	}
}

// TestCodexToolSearchPairs: a Codex tool_search_call is a call, answered
// by the tool_search_output with its call_id (the tools it found are the
// result), so the only orphan results are those whose call_id no earlier
// call of the rollout has, counted here from the raw lines.
func TestCodexToolSearchPairs(t *testing.T) {
	f := "codex/jazzyalex__agent-sessions/small.jsonl"
	b, err := os.ReadFile(tr(f))
	if err != nil {
		t.Fatal(err)
	}
	callTypes := map[string]bool{"function_call": true, "custom_tool_call": true, "local_shell_call": true, "tool_search_call": true}
	outTypes := map[string]bool{"function_call_output": true, "custom_tool_call_output": true, "local_shell_call_output": true, "tool_search_output": true}
	seen := map[string]bool{}
	orphans := 0
	searches := map[string]json.RawMessage{} // call_id -> the tools found
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct {
			Type    string `json:"type"`
			Payload struct {
				Type   string          `json:"type"`
				CallID string          `json:"call_id"`
				Tools  json.RawMessage `json:"tools"`
			} `json:"payload"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Type != "response_item" {
			continue
		}
		p := l.Payload
		switch {
		case callTypes[p.Type]:
			seen[p.CallID] = true
		case outTypes[p.Type]:
			if !seen[p.CallID] {
				orphans++
			}
			if p.Type == "tool_search_output" && seen[p.CallID] {
				searches[p.CallID] = p.Tools
			}
		}
	}
	if len(searches) == 0 {
		t.Fatal("the rollout has no answered tool_search_call; the test wants one")
	}
	ss, err := transcript.Import(transcript.FormatCodex, tr(f))
	if err != nil {
		t.Fatal(err)
	}
	s := ss[0]
	var got []transcript.Note
	for _, n := range s.Report.Notes {
		if n.Code == transcript.CodeOrphanResult {
			got = append(got, n)
		}
	}
	if len(got) != orphans {
		t.Errorf("%d orphan results reported, the source has %d: %+v", len(got), orphans, got)
	}
	st := session.Fold(s.Events)
	for id, tools := range searches {
		c := st.Call(id)
		if c == nil || c.RequestSeq == 0 || c.ResultSeq == 0 {
			t.Errorf("tool_search call %s: not requested and answered: %+v", id, c)
			continue
		}
		e, _ := session.EventAt(s.Events, c.ResultSeq)
		var want, have any
		if err := json.Unmarshal(tools, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(e.Output), &have); err != nil || e.Tool != "tool_search" || !jsonEqual(want, have) {
			t.Errorf("tool_search call %s: result %s %q (%v), want tool_search with the tools found %s", id, e.Tool, e.Output, err, tools)
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestATIFSubagentRefsRoundTrip: the terminus-2 trajectory links its
// context-summarization sub-agents with subagent_trajectory_ref on a
// system step's observation. Imported, exported and imported again, the
// refs and the observations are those of the source (counted from its
// raw JSON), and the refs bring the children back with their events.
func TestATIFSubagentRefsRoundTrip(t *testing.T) {
	f := "atif/harbor-framework__harbor/terminus-2-context-summarization/trajectory.json"
	count := func(b []byte) (refs, obs int) {
		t.Helper()
		var traj struct {
			Steps []struct {
				Observation *struct {
					Results []struct {
						Refs []json.RawMessage `json:"subagent_trajectory_ref"`
					} `json:"results"`
				} `json:"observation"`
			} `json:"steps"`
		}
		if err := json.Unmarshal(b, &traj); err != nil {
			t.Fatal(err)
		}
		for _, st := range traj.Steps {
			if st.Observation == nil {
				continue
			}
			obs++
			for _, r := range st.Observation.Results {
				refs += len(r.Refs)
			}
		}
		return refs, obs
	}
	src, err := os.ReadFile(tr(f))
	if err != nil {
		t.Fatal(err)
	}
	wantRefs, wantObs := count(src)
	if wantRefs == 0 {
		t.Fatal("the source has no subagent_trajectory_ref; the test wants one that does")
	}
	ss, err := transcript.Import(transcript.FormatATIF, tr(f))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string][]session.Event{}
	for _, s := range transcript.All(ss) {
		byID[s.ID()] = s.Events
	}
	load := func(id string) ([]session.Event, error) {
		evs, ok := byID[id]
		if !ok {
			return nil, os.ErrNotExist
		}
		return evs, nil
	}
	p := ss[0]
	out, err := transcript.ExportATIF(p.ID(), p.Events, load)
	if err != nil {
		t.Fatal(err)
	}
	if refs, obs := count(out); refs != wantRefs || obs != wantObs {
		t.Errorf("the export has %d refs and %d observations, the source %d and %d", refs, obs, wantRefs, wantObs)
	}
	back := importWritten(t, transcript.FormatAuto, "trajectory.json", out)
	q := back[0]
	if len(q.Children) != wantRefs || len(p.Children) != wantRefs {
		t.Fatalf("%d children imported back, %d first, %d refs in the source", len(q.Children), len(p.Children), wantRefs)
	}
	// Each child comes back with its events, and the parent's
	// subagent_started names it as imported.
	started := map[string]bool{}
	for _, id := range session.Fold(q.Events).Children {
		started[id] = true
	}
	orig := map[string]int{} // exported child id -> its event count
	for _, c := range p.Children {
		orig[c.ID()] = len(c.Events)
	}
	for _, c := range q.Children {
		if c.Events[0].ParentSessionID != q.ID() || !started[c.ID()] {
			t.Errorf("child %s: parent %q, started by the parent: %v", c.ID(), c.Events[0].ParentSessionID, started[c.ID()])
		}
		if n, ok := orig[strings.TrimPrefix(c.Report.Part, "subagent ")]; !ok || n != len(c.Events) {
			t.Errorf("child %s (%s): %d events back, %d exported", c.ID(), c.Report.Part, len(c.Events), n)
		}
	}
	if len(q.Events) != len(p.Events) {
		t.Errorf("the parent has %d events back, %d exported", len(q.Events), len(p.Events))
	}
}

// TestCodexLatencyWithoutCallTime: a rollout whose lines up to its first
// call output carry no time (derived from a real one: their timestamps
// emptied) gives that output a latency of 0, as every importer does for a
// call of unknown time, not the span from the zero time.
func TestCodexLatencyWithoutCallTime(t *testing.T) {
	const rel = "codex/jazzyalex__agent-sessions/small.jsonl"
	cut := 0
	p := derive(t, rel, "small-derived-no-times-before-output.jsonl", func(lines []string) []string {
		for i, l := range lines {
			var x struct {
				Payload struct {
					Type string `json:"type"`
				} `json:"payload"`
			}
			_ = json.Unmarshal([]byte(l), &x)
			if strings.HasSuffix(x.Payload.Type, "_output") {
				cut = i
				break
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatal(err)
			}
			m["timestamp"] = json.RawMessage(`""`)
			b, _ := json.Marshal(m)
			lines[i] = string(b)
		}
		return lines
	})
	if cut == 0 {
		t.Fatal("the rollout has no call output; this test was written for one with calls")
	}
	ss, err := transcript.Import(transcript.FormatCodex, p)
	if err != nil {
		t.Fatal(err)
	}
	results := 0
	for _, e := range ss[0].Events {
		if e.Kind != session.KindToolResult {
			continue
		}
		results++
		if e.LatencyMS > 24*3600*1000 {
			t.Errorf("result of %s: latency %d ms", e.CallID, e.LatencyMS)
		}
	}
	if results == 0 {
		t.Fatal("no tool_result imported")
	}
}
