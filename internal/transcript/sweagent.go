package transcript

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/session"
)

// sweTraj is a SWE-agent .traj (corpus FORMATS.md section 2.3).
type sweTraj struct {
	Trajectory []struct {
		Action        string          `json:"action"`
		Observation   string          `json:"observation"`
		Response      string          `json:"response"`
		Thought       string          `json:"thought"`
		State         json.RawMessage `json:"state"`
		ExecutionTime *float64        `json:"execution_time"`
	} `json:"trajectory"`
	History []struct {
		Role        string          `json:"role"`
		Content     json.RawMessage `json:"content"`
		IsDemo      bool            `json:"is_demo"`
		Action      string          `json:"action"`
		ToolCallIDs []string        `json:"tool_call_ids"`
		ToolCalls   []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"history"`
	Info struct {
		ExitStatus string `json:"exit_status"`
		Submission string `json:"submission"`
		ModelStats struct {
			InstanceCost   float64 `json:"instance_cost"`
			TokensSent     int64   `json:"tokens_sent"`
			TokensReceived int64   `json:"tokens_received"`
			APICalls       int64   `json:"api_calls"`
		} `json:"model_stats"`
		SWEAgentVersion string `json:"swe_agent_version"`
	} `json:"info"`
	ReplayConfig json.RawMessage `json:"replay_config"`
	Environment  string          `json:"environment"`
	Attempts     json.RawMessage `json:"attempts"`
}

// importSWEAgent maps each trajectory step to one response (its thought
// and its action as one tool call) and the action's observation to the
// call's result. The calls' ids and tools come from the history's
// function calls where it has them (1.x); otherwise (0.x, and the last
// step, which the history never shows the model) an action is a shell
// command ("bash") with a step id. SWE-agent records no timestamps and
// only run totals of usage: those go on the last model_call, said so in
// its attrs.
func importSWEAgent(path string) (*Session, error) {
	data, file, err := readSource(path)
	if err != nil {
		return nil, err
	}
	var t sweTraj
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("import swe-agent %s: %w", path, err)
	}
	if len(t.Trajectory) == 0 && len(t.History) == 0 {
		return nil, fmt.Errorf("import swe-agent %s: no trajectory or history; is this a SWE-agent .traj?", path)
	}
	b := newBuilder(FormatSWEAgent, file, data)
	b.records = len(t.Trajectory) + len(t.History)
	b.notRecorded("timestamps", "per-call usage (the run's totals are on the last model_call)", "tool error flags")
	var rc struct {
		Agent struct {
			Model struct {
				Name string `json:"name"`
			} `json:"model"`
		} `json:"agent"`
	}
	cfg := t.ReplayConfig
	var s string
	if json.Unmarshal(cfg, &s) == nil {
		cfg = json.RawMessage(s)
	}
	_ = json.Unmarshal(cfg, &rc)
	model := rc.Agent.Model.Name
	prov, model := splitModel(model, "openai")
	if model == "" {
		b.notRecorded("model")
		prov = ""
	}
	b.hdr.Provider, b.hdr.Model = prov, model
	b.hdr.Name = "swe-agent " + strings.TrimSuffix(baseName(file), ".traj")
	if t.Info.ExitStatus != "" {
		b.attrs["source_status"] = t.Info.ExitStatus
	}
	if t.Info.Submission != "" {
		b.attrs["submission"] = t.Info.Submission
	}
	if t.Info.SWEAgentVersion != "" {
		b.attrs["source_version"] = t.Info.SWEAgentVersion
	}
	if t.Environment != "" {
		b.attrs["environment"] = t.Environment
	}
	if len(t.Attempts) > 0 {
		b.note(0, CodeNotImported, "the RetryAgent's other attempts are not imported; the chosen attempt (the top-level trajectory) is")
	}
	// The system prompt and the task, from the history.
	type call struct {
		id, name string
		args     json.RawMessage
	}
	var calls []call
	prompted := false
	for i, h := range t.History {
		switch {
		case h.Role == "system" && b.hdr.System == "":
			b.hdr.System = textOf(h.Content)
		case h.Role == "user" && h.IsDemo:
			b.note(i+1, CodeSkipped, "a demonstration shown to the model (is_demo)")
		case h.Role == "user" && !prompted:
			b.add(session.Event{Kind: session.KindUserMessage, Text: textOf(h.Content)})
			prompted = true
		case h.Role == "assistant":
			for _, tc := range h.ToolCalls {
				calls = append(calls, call{tc.ID, tc.Function.Name, tc.Function.Arguments})
			}
			if len(h.ToolCalls) == 0 {
				calls = append(calls, call{})
			}
		}
	}
	if !prompted {
		b.notRecorded("the task prompt")
	}
	if len(t.Trajectory) == 0 {
		sweHistory(b, &t, prov, model)
		return b.finish(""), nil
	}
	for i, st := range t.Trajectory {
		n := i + 1
		c := call{}
		if i < len(calls) {
			c = calls[i]
		}
		tc := session.ToolCall{ID: c.id, Name: c.name, Args: argsObject(c.args)}
		if tc.ID == "" {
			tc.ID = fmt.Sprintf("step-%d", n)
		}
		if tc.Name == "" {
			cmd, _ := json.Marshal(strings.TrimRight(st.Action, "\n"))
			tc.Name, tc.Args = "bash", json.RawMessage(`{"command":`+string(cmd)+`}`)
		}
		text := st.Thought
		if text == "" {
			text = st.Response
		}
		tr := turn{text: text, calls: []session.ToolCall{tc}, provider: prov, model: model, attrs: map[string]any{}}
		if st.Response != "" && st.Response != st.Thought {
			tr.attrs["response"] = st.Response
		}
		if len(st.State) > 0 && string(st.State) != "null" {
			tr.attrs["state"] = st.State
		}
		if i == len(t.Trajectory)-1 {
			ms := t.Info.ModelStats
			if ms.TokensSent+ms.TokensReceived > 0 {
				tr.usage = &pricing.Usage{Input: ms.TokensSent, Output: ms.TokensReceived}
				tr.sourceCost = &ms.InstanceCost
			}
			tr.callAttrs = map[string]any{"usage": "run totals (info.model_stats); the trajectory records no per-call usage",
				"api_calls": ms.APICalls, "source_cost_usd": ms.InstanceCost}
		}
		b.addTurn(tr, n)
		b.intent(tc, b.evs[len(b.evs)-1].TS)
		var lat int64
		if st.ExecutionTime != nil {
			lat = int64(*st.ExecutionTime * 1000)
		}
		b.result(n, tc.ID, st.Observation, session.ResultOK, "", b.evs[len(b.evs)-1].TS, lat, nil)
	}
	return b.finish(""), nil
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// sweHistory imports a .traj that holds only the history (the chat as sent
// to the model, no trajectory steps): each assistant message one response,
// its function calls (1.x) or its action (an older history's shell
// command) its calls, and each tool message, or with no function calls the
// user message after an action, their results. Run totals of usage go on
// the last model_call, as for a trajectory.
func sweHistory(b *builder, t *sweTraj, prov, model string) {
	b.attrs["imported_from_history"] = true
	b.notRecorded("execution times")
	prompted := false
	var pending []string // calls of the last response with no result yet
	last := -1
	for i, h := range t.History {
		if h.Role == "assistant" {
			last = i
		}
	}
	for i, h := range t.History {
		n := i + 1
		switch {
		case h.Role == "system":
			if b.hdr.System != "" && b.hdr.System != textOf(h.Content) {
				b.add(session.Event{Kind: session.KindUserMessage, Text: textOf(h.Content), Attrs: marshalAttrs(map[string]any{"role": "system"})})
			}
		case h.Role == "user" && h.IsDemo:
			// Noted with the prompt above.
		case h.Role == "user" && !prompted:
			prompted = true // the task, added above
		case h.Role == "user" && len(pending) == 1 && strings.HasPrefix(pending[0], "step-"):
			// An older history: the observation of the action before it.
			b.result(n, pending[0], textOf(h.Content), session.ResultOK, "", time.Time{}, 0, nil)
			pending = nil
		case h.Role == "user":
			b.add(session.Event{Kind: session.KindUserMessage, Text: textOf(h.Content)})
		case h.Role == "assistant":
			tr := turn{text: textOf(h.Content), provider: prov, model: model}
			for _, tc := range h.ToolCalls {
				tr.calls = append(tr.calls, session.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: argsObject(tc.Function.Arguments)})
			}
			if len(tr.calls) == 0 && strings.TrimSpace(h.Action) != "" {
				cmd, _ := json.Marshal(strings.TrimRight(h.Action, "\n"))
				tr.calls = []session.ToolCall{{ID: fmt.Sprintf("step-%d", n), Name: "bash", Args: json.RawMessage(`{"command":` + string(cmd) + `}`)}}
			}
			if i == last {
				ms := t.Info.ModelStats
				if ms.TokensSent+ms.TokensReceived > 0 {
					tr.usage = &pricing.Usage{Input: ms.TokensSent, Output: ms.TokensReceived}
					tr.sourceCost = &ms.InstanceCost
				}
				tr.callAttrs = map[string]any{"usage": "run totals (info.model_stats); the history records no per-call usage",
					"api_calls": ms.APICalls, "source_cost_usd": ms.InstanceCost}
			}
			b.addTurn(tr, n)
			pending = nil
			for _, tc := range tr.calls {
				b.intent(tc, time.Time{})
				pending = append(pending, tc.ID)
			}
		case h.Role == "tool":
			ids := h.ToolCallIDs
			if len(ids) == 0 && len(pending) == 1 {
				ids = pending
			}
			if len(ids) == 0 {
				b.note(n, CodeNotImported, "a tool message that names no call, after a response with %d calls; not imported", len(pending))
				continue
			}
			for _, id := range ids {
				b.result(n, id, textOf(h.Content), session.ResultOK, "", time.Time{}, 0, nil)
				pending = slices.DeleteFunc(pending, func(p string) bool { return p == id })
			}
		default:
			b.note(n, CodeUnknownRecord, "history role %q; skipped", h.Role)
		}
	}
}
