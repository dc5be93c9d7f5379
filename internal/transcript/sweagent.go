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
		ToolCalls   []fnCall        `json:"tool_calls"`
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
	x := &sweImport{}
	if err := json.Unmarshal(data, &x.t); err != nil {
		return nil, fmt.Errorf("import swe-agent %s: %w", path, err)
	}
	if len(x.t.Trajectory) == 0 && len(x.t.History) == 0 {
		return nil, fmt.Errorf("import swe-agent %s: no trajectory or history; is this a SWE-agent .traj?", path)
	}
	x.b = newBuilder(FormatSWEAgent, file, data)
	x.b.records = len(x.t.Trajectory) + len(x.t.History)
	x.b.notRecorded(session.NotRecordedTimes, "per-call usage (the run's totals are on the last model_call)", "tool error flags")
	x.header(file)
	x.prompt()
	if len(x.t.Trajectory) == 0 {
		x.history()
		return x.b.finish(""), nil
	}
	for i := range x.t.Trajectory {
		x.step(i)
	}
	return x.b.finish(""), nil
}

// sweImport is one SWE-agent trajectory being imported.
type sweImport struct {
	b           *builder
	t           sweTraj
	prov, model string
	// calls are the history's function calls, one a response (a zero
	// call for a response without one), for the trajectory's steps.
	calls []sweCall
	// pending are the calls of the history's last response with no
	// result yet.
	pending []string
}

type sweCall struct {
	id, name string
	args     json.RawMessage
}

// header names the model (replay_config, itself JSON in a string in
// newer files), the end state, the submission and the version.
func (x *sweImport) header(file string) {
	b, t := x.b, &x.t
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
	x.prov, x.model = splitModel(rc.Agent.Model.Name, "openai")
	if x.model == "" {
		b.notRecorded("model")
		x.prov = ""
	}
	b.hdr.Provider, b.hdr.Model = x.prov, x.model
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
}

// prompt takes the system prompt and the task from the history, and the
// function calls of its responses.
func (x *sweImport) prompt() {
	b := x.b
	prompted := false
	for i, h := range x.t.History {
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
				x.calls = append(x.calls, sweCall{tc.ID, tc.Function.Name, tc.Function.Arguments})
			}
			if len(h.ToolCalls) == 0 {
				x.calls = append(x.calls, sweCall{})
			}
		}
	}
	if !prompted {
		b.notRecorded("the task prompt")
	}
}

// step imports trajectory step i: a response whose call is the history's
// function call, or the step's action as a shell command, and the
// observation as its result.
func (x *sweImport) step(i int) {
	st, n := &x.t.Trajectory[i], i+1
	c := sweCall{}
	if i < len(x.calls) {
		c = x.calls[i]
	}
	tc := session.ToolCall{ID: c.id, Name: c.name, Args: argsObject(c.args)}
	if tc.ID == "" {
		tc.ID = fmt.Sprintf("step-%d", n)
	}
	if tc.Name == "" {
		tc.Name, tc.Args = "bash", bashArgs(st.Action)
	}
	text := st.Thought
	if text == "" {
		text = st.Response
	}
	tr := turn{text: text, calls: []session.ToolCall{tc}, provider: x.prov, model: x.model, attrs: map[string]any{}}
	if st.Response != "" && st.Response != st.Thought {
		tr.attrs["response"] = st.Response
	}
	if len(st.State) > 0 && string(st.State) != "null" {
		tr.attrs["state"] = st.State
	}
	if i == len(x.t.Trajectory)-1 {
		x.runTotals(&tr, "trajectory")
	}
	x.b.addTurn(tr, n)
	x.b.intent(tc, x.b.evs[len(x.b.evs)-1].TS)
	var lat int64
	if st.ExecutionTime != nil {
		lat = int64(*st.ExecutionTime * 1000)
	}
	x.b.result(n, tc.ID, st.Observation, session.ResultOK, "", x.b.evs[len(x.b.evs)-1].TS, lat, nil)
}

// bashArgs are the arguments of an action run as a shell command.
func bashArgs(action string) json.RawMessage {
	cmd, _ := json.Marshal(strings.TrimRight(action, "\n"))
	return json.RawMessage(`{"command":` + string(cmd) + `}`)
}

// runTotals puts the run's usage totals (info.model_stats) on the last
// response, said so in its attrs: what (the trajectory, the history)
// records no per-call usage.
func (x *sweImport) runTotals(tr *turn, what string) {
	ms := x.t.Info.ModelStats
	if ms.TokensSent+ms.TokensReceived > 0 {
		tr.usage = &pricing.Usage{Input: ms.TokensSent, Output: ms.TokensReceived}
		tr.sourceCost = &ms.InstanceCost
	}
	tr.callAttrs = map[string]any{"usage": "run totals (info.model_stats); the " + what + " records no per-call usage",
		"api_calls": ms.APICalls, "source_cost_usd": ms.InstanceCost}
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// history imports a .traj that holds only the history (the chat as sent
// to the model, no trajectory steps): each assistant message one response,
// its function calls (1.x) or its action (an older history's shell
// command) its calls, and each tool message, or with no function calls the
// user message after an action, their results. Run totals of usage go on
// the last model_call, as for a trajectory.
func (x *sweImport) history() {
	b := x.b
	b.attrs["imported_from_history"] = true
	b.notRecorded("execution times")
	prompted := false
	last := -1
	for i, h := range x.t.History {
		if h.Role == "assistant" {
			last = i
		}
	}
	for i, h := range x.t.History {
		n := i + 1
		switch {
		case h.Role == "system":
			if b.hdr.System != "" && b.hdr.System != textOf(h.Content) {
				b.add(session.Event{Kind: session.KindUserMessage, Text: textOf(h.Content), Attrs: marshalAttrs(map[string]any{"role": "system"})})
			}
		case h.Role == "user" && h.IsDemo:
			// Noted with the prompt.
		case h.Role == "user" && !prompted:
			prompted = true // the task, added by prompt
		case h.Role == "user" && len(x.pending) == 1 && strings.HasPrefix(x.pending[0], "step-"):
			// An older history: the observation of the action before it.
			b.result(n, x.pending[0], textOf(h.Content), session.ResultOK, "", time.Time{}, 0, nil)
			x.pending = nil
		case h.Role == "user":
			b.add(session.Event{Kind: session.KindUserMessage, Text: textOf(h.Content)})
		case h.Role == "assistant":
			x.historyResponse(i, i == last)
		case h.Role == "tool":
			x.historyResults(i)
		default:
			b.note(n, CodeUnknownRecord, "history role %q; skipped", h.Role)
		}
	}
}

// historyResponse imports history message i, an assistant's, as a
// response (the last one with the run's totals) and its calls' intents.
func (x *sweImport) historyResponse(i int, last bool) {
	h, n := &x.t.History[i], i+1
	tr := turn{text: textOf(h.Content), provider: x.prov, model: x.model}
	for _, tc := range h.ToolCalls {
		tr.calls = append(tr.calls, session.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: argsObject(tc.Function.Arguments)})
	}
	if len(tr.calls) == 0 && strings.TrimSpace(h.Action) != "" {
		tr.calls = []session.ToolCall{{ID: fmt.Sprintf("step-%d", n), Name: "bash", Args: bashArgs(h.Action)}}
	}
	if last {
		x.runTotals(&tr, "history")
	}
	x.b.addTurn(tr, n)
	x.pending = nil
	for _, tc := range tr.calls {
		x.b.intent(tc, time.Time{})
		x.pending = append(x.pending, tc.ID)
	}
}

// historyResults imports history message i, a tool's, as the results of
// the calls it names (or of the one call waiting).
func (x *sweImport) historyResults(i int) {
	h, n := &x.t.History[i], i+1
	ids := h.ToolCallIDs
	if len(ids) == 0 && len(x.pending) == 1 {
		ids = x.pending
	}
	if len(ids) == 0 {
		x.b.note(n, CodeNotImported, "a tool message that names no call, after a response with %d calls; not imported", len(x.pending))
		return
	}
	for _, id := range ids {
		x.b.result(n, id, textOf(h.Content), session.ResultOK, "", time.Time{}, 0, nil)
		x.pending = slices.DeleteFunc(x.pending, func(p string) bool { return p == id })
	}
}

func init() {
	Register(Format{
		Name:   FormatSWEAgent,
		Doc:    "SWE-agent trajectory (*.traj)",
		Exts:   []string{".traj"},
		Detect: detectSWEAgent,
		Import: func(path string) ([]*Session, error) { return one(importSWEAgent(path)) },
	})
}

// detectSWEAgent claims a JSON object with a top-level "trajectory" (and
// no ATIF schema_version, whose files have "steps").
func detectSWEAgent(h *Head) bool {
	keys, _, ok := h.TopKeys()
	return ok && slices.Contains(keys, "trajectory") && !slices.Contains(keys, "schema_version")
}
