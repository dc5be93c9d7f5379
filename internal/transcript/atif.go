package transcript

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/tools"
)

// ATIF (Harbor's Agent Trajectory Interchange Format, RFC 0001 v1.7;
// corpus FORMATS.md section 2.6).

// ATIFVersion is the schema_version ExportATIF writes.
const ATIFVersion = "ATIF-v1.7"

type atifTrajectory struct {
	SchemaVersion string          `json:"schema_version"`
	SessionID     string          `json:"session_id,omitempty"`
	TrajectoryID  string          `json:"trajectory_id,omitempty"`
	Agent         atifAgent       `json:"agent"`
	Steps         []atifStep      `json:"steps"`
	Notes         string          `json:"notes,omitempty"`
	FinalMetrics  json.RawMessage `json:"final_metrics,omitempty"`
	Continued     string          `json:"continued_trajectory_ref,omitempty"`
	Subagents     []atifRawTraj   `json:"subagent_trajectories,omitempty"`
	Extra         json.RawMessage `json:"extra,omitempty"`
}

// atifRawTraj is an embedded sub-agent trajectory, kept as bytes until it
// is imported on its own.
type atifRawTraj = json.RawMessage

type atifAgent struct {
	Name      string          `json:"name"`
	Version   string          `json:"version"`
	ModelName string          `json:"model_name,omitempty"`
	Extra     json.RawMessage `json:"extra,omitempty"`
}

type atifStep struct {
	StepID           int             `json:"step_id"`
	Timestamp        string          `json:"timestamp,omitempty"`
	Source           string          `json:"source"`
	ModelName        string          `json:"model_name,omitempty"`
	ReasoningEffort  json.RawMessage `json:"reasoning_effort,omitempty"`
	Message          json.RawMessage `json:"message"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	ToolCalls        []atifToolCall  `json:"tool_calls,omitempty"`
	Observation      *atifObs        `json:"observation,omitempty"`
	Metrics          *atifMetrics    `json:"metrics,omitempty"`
	LLMCallCount     *int            `json:"llm_call_count,omitempty"`
	IsCopiedContext  bool            `json:"is_copied_context,omitempty"`
	Extra            json.RawMessage `json:"extra,omitempty"`
}

type atifToolCall struct {
	ToolCallID   string          `json:"tool_call_id"`
	FunctionName string          `json:"function_name"`
	Arguments    json.RawMessage `json:"arguments"`
	Extra        json.RawMessage `json:"extra,omitempty"`
}

type atifObs struct {
	Results []atifResult `json:"results"`
}

type atifResult struct {
	SourceCallID string          `json:"source_call_id,omitempty"`
	Content      json.RawMessage `json:"content,omitempty"`
	SubagentRefs []atifRef       `json:"subagent_trajectory_ref,omitempty"`
	Extra        json.RawMessage `json:"extra,omitempty"`
}

type atifRef struct {
	TrajectoryID   string          `json:"trajectory_id,omitempty"`
	TrajectoryPath string          `json:"trajectory_path,omitempty"`
	SessionID      string          `json:"session_id,omitempty"`
	Extra          json.RawMessage `json:"extra,omitempty"`
}

type atifMetrics struct {
	PromptTokens     *int64          `json:"prompt_tokens,omitempty"`
	CompletionTokens *int64          `json:"completion_tokens,omitempty"`
	CachedTokens     *int64          `json:"cached_tokens,omitempty"`
	CostUSD          *float64        `json:"cost_usd,omitempty"`
	Extra            json.RawMessage `json:"extra,omitempty"`
}

type atifFinal struct {
	TotalPromptTokens     int64           `json:"total_prompt_tokens"`
	TotalCompletionTokens int64           `json:"total_completion_tokens"`
	TotalCachedTokens     int64           `json:"total_cached_tokens"`
	TotalCostUSD          float64         `json:"total_cost_usd"`
	TotalSteps            int             `json:"total_steps"`
	Extra                 json.RawMessage `json:"extra,omitempty"`
}

// agentctlExtra is what an export keeps under extra.agentctl: the fields
// ATIF has no place for, so that an import gives the events back.
type agentctlExtra struct {
	Seq   int64           `json:"seq,omitempty"`
	TS    string          `json:"ts,omitempty"`
	Attrs json.RawMessage `json:"attrs,omitempty"`
	// Step extras.
	Refusal      string `json:"refusal,omitempty"`
	FinishReason string `json:"finish_reason,omitempty"`
	// The assistant message's own usage (metrics are the model_call's).
	InputTokens  int64          `json:"input_tokens,omitempty"`
	OutputTokens int64          `json:"output_tokens,omitempty"`
	ModelCall    *session.Event `json:"model_call,omitempty"`
	// A system step that stands for an event ATIF has no step for.
	Event *session.Event `json:"event,omitempty"`
	// Tool call extras: its intent; result extras: the fields beside its
	// content.
	Intent    *session.Event `json:"intent,omitempty"`
	Status    string         `json:"status,omitempty"`
	Error     string         `json:"error,omitempty"`
	LatencyMS int64          `json:"latency_ms,omitempty"`
	Artifact  string         `json:"artifact,omitempty"`
	Tool      string         `json:"tool,omitempty"`
	// The root: the header exported.
	Header *session.Event `json:"header,omitempty"`
}

func agentctlOf(extra json.RawMessage) *agentctlExtra {
	if len(extra) == 0 {
		return nil
	}
	var x struct {
		A *agentctlExtra `json:"agentctl"`
	}
	if json.Unmarshal(extra, &x) != nil {
		return nil
	}
	return x.A
}

func withAgentctl(extra json.RawMessage, a agentctlExtra) json.RawMessage {
	m := map[string]any{}
	if len(extra) > 0 {
		_ = json.Unmarshal(extra, &m)
	}
	m["agentctl"] = a
	return marshalAttrs(m)
}

func importATIFFile(path string, seen map[string]bool) (*Session, error) {
	data, file, err := readSource(path)
	if err != nil {
		return nil, err
	}
	return importATIF(data, file, "", seen)
}

// importATIF imports one trajectory (part names an embedded one), then
// the sub-agent trajectories its results refer to, as children.
func importATIF(data []byte, file, part string, seen map[string]bool) (*Session, error) {
	x, err := decodeATIF(data, file, part)
	if err != nil {
		return nil, err
	}
	x.header()
	for i, st := range x.t.Steps {
		x.step(i+1, st)
	}
	if x.ours {
		sort.SliceStable(x.evs, func(i, j int) bool { return x.evs[i].Seq < x.evs[j].Seq })
		for _, e := range x.evs {
			x.b.add(e)
		}
	}
	s := x.b.finish(part)
	seen[s.ID()] = true
	x.subagents(s, seen)
	return s, nil
}

// atifImport is one trajectory being imported. ours: it is an agentctl
// export, whose steps carry the events under extra.agentctl; their
// events are gathered in evs with the export's seqs, and written in seq
// order at the end.
type atifImport struct {
	b           *builder
	t           atifTrajectory
	file        string
	prov, model string
	ours        bool
	evs         []session.Event
	// refs are the sub-agent refs met, each with the seq it follows.
	refs []atifPendingRef
}

type atifPendingRef struct {
	r     atifRef
	after int64
}

// decodeATIF reads a trajectory. An embedded one (part set) is hashed by
// its file's content, which still names the source.
func decodeATIF(data []byte, file, part string) (*atifImport, error) {
	x := &atifImport{file: file}
	if err := json.Unmarshal(data, &x.t); err != nil {
		return nil, fmt.Errorf("import atif %s: %w", file, err)
	}
	if !strings.HasPrefix(x.t.SchemaVersion, "ATIF-") {
		return nil, fmt.Errorf("import atif %s: schema_version %q is not ATIF's; is this a trajectory.json?", file, x.t.SchemaVersion)
	}
	content := data
	if part != "" {
		content, _ = os.ReadFile(file)
	}
	x.b = newBuilder(FormatATIF, file, content)
	return x, nil
}

// header names the trajectory's agent and model, or, for an agentctl
// export, gives back the header it exported.
func (x *atifImport) header() {
	b, t := x.b, &x.t
	b.records = len(t.Steps)
	b.attrs["source_session_id"] = t.SessionID
	b.attrs["source_version"] = t.SchemaVersion
	b.attrs["agent"] = t.Agent.Name + " " + t.Agent.Version
	if t.TrajectoryID != "" {
		b.attrs["trajectory_id"] = t.TrajectoryID
	}
	if len(t.FinalMetrics) > 0 {
		b.attrs["final_metrics"] = t.FinalMetrics
	}
	if t.Continued != "" {
		b.attrs["continued_trajectory_ref"] = t.Continued
		b.note(0, CodeSkipped, "the trajectory continues in %s (continued_trajectory_ref); import that file too", t.Continued)
	}
	x.prov, x.model = splitModel(t.Agent.ModelName, "")
	if x.prov == "" {
		x.prov = providerOf(x.model)
	}
	b.hdr.Provider, b.hdr.Model = x.prov, x.model
	b.hdr.Name = "atif " + t.Agent.Name + " " + t.SessionID
	root := agentctlOf(t.Extra)
	x.ours = root != nil && root.Header != nil
	if x.ours {
		h := root.Header
		b.hdr.Provider, b.hdr.Model, b.hdr.System, b.hdr.Workspace = h.Provider, h.Model, h.System, h.Workspace
		b.hdr.Name, b.hdr.TS = h.Name, h.TS
		b.attrs["source_session_id"] = h.SessionID
	} else {
		b.notRecorded("tool error flags", "end state")
	}
}

// add writes e, or, for an export, gathers it.
func (x *atifImport) add(e session.Event) {
	if !x.ours {
		x.b.add(e)
		return
	}
	x.evs = append(x.evs, e)
}

// stamp gives e the seq, time and attrs an export kept for it.
func stamp(ax *agentctlExtra, e *session.Event) {
	if ax != nil {
		e.Seq = ax.Seq
		if t, ok := parseTime(ax.TS); ok {
			e.TS = t
		}
		e.Attrs = ax.Attrs
	}
}

// refsIn keeps the sub-agent refs of result r, after the latest event.
func (x *atifImport) refsIn(r atifResult) {
	for _, sr := range r.SubagentRefs {
		x.refs = append(x.refs, atifPendingRef{sr, x.b.lastSeq()})
	}
}

// step imports step n: an event an export kept whole, or a user, system
// or agent step, then its observation.
func (x *atifImport) step(n int, st atifStep) {
	ts, _ := parseTime(st.Timestamp)
	ax := agentctlOf(st.Extra)
	text := atifText(st.Message)
	if ax != nil && ax.Event != nil {
		x.add(*ax.Event)
		if st.Observation != nil {
			for _, r := range st.Observation.Results {
				x.refsIn(r)
			}
		}
		return
	}
	switch st.Source {
	case "user":
		e := session.Event{Kind: session.KindUserMessage, TS: ts, Text: text}
		if st.IsCopiedContext {
			e.Attrs = marshalAttrs(map[string]any{"copied_context": true})
		}
		stamp(ax, &e)
		x.add(e)
	case "system":
		x.system(st, n, ts, text)
	case "agent":
		x.agent(st, n, ts, text, ax)
	default:
		x.b.note(n, CodeUnknownRecord, "step source %q is not one ATIF defines; skipped", st.Source)
		return
	}
	if st.Observation != nil {
		pairs := pairByPosition(st)
		for ri, r := range st.Observation.Results {
			x.refsIn(r)
			x.result(st, n, ts, r, pairs[ri])
		}
	}
}

// system imports a system step: a compaction (context_management), the
// system prompt (the first step), or else a user message from the system.
func (x *atifImport) system(st atifStep, n int, ts time.Time, text string) {
	var cm struct {
		CM *struct {
			Type string `json:"type"`
		} `json:"context_management"`
	}
	_ = json.Unmarshal(st.Extra, &cm)
	summary := text
	if st.Observation != nil {
		for _, r := range st.Observation.Results {
			if c := atifText(r.Content); c != "" {
				summary += "\n" + c
			}
		}
	}
	switch {
	case cm.CM != nil:
		x.add(session.Event{Kind: session.KindCompaction, TS: ts, Through: x.b.lastSeq(), Summary: summary,
			Attrs: marshalAttrs(map[string]any{"context_management": json.RawMessage(mustJSON(cm.CM))})})
	case x.b.hdr.System == "" && len(x.b.evs) == 0 && len(x.evs) == 0:
		x.b.hdr.System = text
	default:
		x.add(session.Event{Kind: session.KindUserMessage, TS: ts, Text: text, Attrs: marshalAttrs(map[string]any{"source": "system"})})
		x.b.note(n, CodeKeptInAttrs, "a system step after the start, imported as a user message with attrs {\"source\":\"system\"}")
	}
}

// agent imports an agent step as a response and its calls' intents.
func (x *atifImport) agent(st atifStep, n int, ts time.Time, text string, ax *agentctlExtra) {
	tr := x.turnOf(st, ts, text, ax)
	if x.ours {
		x.exported(st, ts, text, ax, tr)
	} else {
		x.b.addTurn(tr, n)
	}
	for _, tc := range st.ToolCalls {
		tx := agentctlOf(tc.Extra)
		switch {
		case tx != nil && tx.Intent != nil:
			x.add(*tx.Intent)
		case !x.ours:
			x.b.intent(session.ToolCall{ID: tc.ToolCallID, Name: tc.FunctionName, Args: argsObject(tc.Arguments)}, ts)
		}
	}
}

// turnOf is the response an agent step records: its model, what maps to
// no field (reasoning, extra), whether it was an inference
// (llm_call_count, copied context), its metrics and calls.
func (x *atifImport) turnOf(st atifStep, ts time.Time, text string, ax *agentctlExtra) turn {
	tr := turn{ts: ts, text: text, provider: x.prov, model: x.model, attrs: map[string]any{}}
	if st.ModelName != "" {
		_, tr.model = splitModel(st.ModelName, "")
	}
	if st.ReasoningContent != "" {
		tr.attrs["reasoning_content"] = st.ReasoningContent
	}
	if len(st.ReasoningEffort) > 0 {
		tr.attrs["reasoning_effort"] = st.ReasoningEffort
	}
	if len(st.Extra) > 0 && ax == nil {
		tr.attrs["extra"] = st.Extra
	}
	if st.IsCopiedContext {
		tr.attrs["copied_context"] = true
		tr.noCall = true
	}
	if st.LLMCallCount != nil {
		switch c := *st.LLMCallCount; {
		case c == 0:
			tr.noCall = true
		case c > 1:
			tr.callAttrs = map[string]any{"llm_call_count": c}
		}
	}
	if m := st.Metrics; m != nil {
		tr.usage, tr.sourceCost = atifUsage(m), m.CostUSD
	}
	for _, tc := range st.ToolCalls {
		tr.calls = append(tr.calls, session.ToolCall{ID: tc.ToolCallID, Name: tc.FunctionName, Args: argsObject(tc.Arguments)})
	}
	if len(tr.attrs) == 0 {
		tr.attrs = nil
	}
	return tr
}

// atifUsage reads a step's metrics (the cache writes from their extra).
func atifUsage(m *atifMetrics) *pricing.Usage {
	var x struct {
		CacheCreation int64 `json:"cache_creation_input_tokens"`
		CC            struct {
			H1 int64 `json:"ephemeral_1h_input_tokens"`
		} `json:"cache_creation"`
	}
	_ = json.Unmarshal(m.Extra, &x)
	return &pricing.Usage{Input: deref(m.PromptTokens), CacheRead: deref(m.CachedTokens), CacheCreation: x.CacheCreation,
		CacheCreation1h: x.CC.H1, Output: deref(m.CompletionTokens)}
}

// exported gives back the assistant_message and model_call an agentctl
// export made the step of, with the metrics it shows.
func (x *atifImport) exported(st atifStep, ts time.Time, text string, ax *agentctlExtra, tr turn) {
	a := session.Event{Kind: session.KindAssistantMessage, TS: ts, Text: text, ToolCalls: tr.calls}
	stamp(ax, &a)
	if ax != nil {
		a.Refusal, a.FinishReason = ax.Refusal, ax.FinishReason
		a.InputTokens, a.OutputTokens = ax.InputTokens, ax.OutputTokens
	}
	x.add(a)
	if ax == nil || ax.ModelCall == nil {
		return
	}
	c := *ax.ModelCall
	if tr.usage != nil {
		setUsage(&c, *tr.usage)
	}
	if st.Metrics != nil && st.Metrics.CostUSD != nil {
		c.CostUSD = *st.Metrics.CostUSD
	}
	c.Model = tr.model
	x.add(c)
}

// result imports result r of step st: paired by its source_call_id, or
// by position (pairedCall), else kept as a user message; an export's
// result comes back as exported.
func (x *atifImport) result(st atifStep, n int, ts time.Time, r atifResult, pairedCall string) {
	if len(r.SubagentRefs) > 0 && r.SourceCallID == "" && atifText(r.Content) == "" {
		return // a result that only names sub-agents: no content to pair
	}
	rx := agentctlOf(r.Extra)
	if x.ours && rx != nil && rx.Event != nil {
		x.add(*rx.Event) // an unpaired result exported
		return
	}
	byPosition := false
	if r.SourceCallID == "" {
		if st.Source == "system" {
			return // in the system step's summary
		}
		if pairedCall == "" {
			x.unpaired(n, ts, r)
			return
		}
		r.SourceCallID, byPosition = pairedCall, true
	}
	if x.ours && rx != nil {
		e := session.Event{Kind: session.KindToolResult, CallID: r.SourceCallID, Tool: rx.Tool, Output: atifText(r.Content),
			Status: rx.Status, Error: rx.Error, LatencyMS: rx.LatencyMS, Artifact: rx.Artifact}
		stamp(rx, &e)
		x.add(e)
		return
	}
	attrs := map[string]any{}
	if len(r.Extra) > 0 {
		attrs["extra"] = r.Extra
	}
	if byPosition {
		attrs["paired_by"] = "position"
	}
	if ci := x.b.calls[r.SourceCallID]; ci == nil {
		// The validator wants results paired within their step.
		x.b.note(n, CodeOrphanResult, "result for %s, which this step did not call", r.SourceCallID)
	}
	x.b.result(n, r.SourceCallID, atifText(r.Content), session.ResultOK, "", ts, 0, attrs)
}

// unpaired keeps a result no call pairs with, as what the environment
// told the agent, which the export writes back as an unpaired result.
func (x *atifImport) unpaired(n int, ts time.Time, r atifResult) {
	attrs := map[string]any{"atif_observation": true}
	if len(r.Extra) > 0 {
		attrs["extra"] = r.Extra
	}
	x.add(session.Event{Kind: session.KindUserMessage, TS: ts, Text: atifText(r.Content), Attrs: marshalAttrs(attrs)})
	x.b.note(n, CodeKeptInAttrs, "a result with no source_call_id that no call of the step pairs with by position; kept as a user message with attrs {\"atif_observation\":true}")
}

// subagents imports the sub-agents the refs name (files beside this one,
// or embedded trajectories) as children of s; the last first, so the
// earlier insertion points keep their seqs.
func (x *atifImport) subagents(s *Session, seen map[string]bool) {
	for i := len(x.refs) - 1; i >= 0; i-- {
		r := x.refs[i]
		child := x.child(s, r.r, seen)
		if child == nil || seen[child.ID()+"/linked"] {
			continue
		}
		seen[child.ID()+"/linked"] = true
		if x.ours {
			// agentctl's export keeps the subagent_started and _finished
			// events themselves; they name the exported child by the
			// ref's session_id.
			adopt(s, child, r.r.SessionID)
			continue
		}
		out := ""
		var sum struct {
			Summary string `json:"summary"`
		}
		if json.Unmarshal(r.r.Extra, &sum) == nil {
			out = sum.Summary
		}
		link(s, child, r.after, out)
	}
}

// child imports the trajectory ref r names, or notes on s why not (nil).
func (x *atifImport) child(s *Session, r atifRef, seen map[string]bool) *Session {
	var child *Session
	var err error
	switch {
	case r.TrajectoryID != "" && embedded(x.t.Subagents, r.TrajectoryID) != nil:
		child, err = importATIF(embedded(x.t.Subagents, r.TrajectoryID), x.file, "subagent "+r.TrajectoryID, seen)
	case r.TrajectoryPath != "":
		// The path is the file's word, not the user's: only a regular
		// file in the trajectory's folder is read, as read_file would.
		dir := filepath.Dir(x.file)
		data, rerr := tools.ReadFileIn(dir, r.TrajectoryPath)
		if rerr != nil {
			s.Report.Notes = append(s.Report.Notes, Note{Code: CodeNotImported, Detail: fmt.Sprintf("sub-agent trajectory %q (trajectory_path) not imported: only a regular file of at most %d MiB in the trajectory's folder %s is read: %v", r.TrajectoryPath, tools.MaxFileSize>>20, dir, rerr)})
			return nil
		}
		p := r.TrajectoryPath
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		child, err = importATIF(data, p, "", seen)
	default:
		s.Report.Notes = append(s.Report.Notes, Note{Code: CodeSkipped, Detail: fmt.Sprintf("a sub-agent ref with neither trajectory_id nor trajectory_path (session %s)", r.SessionID)})
		return nil
	}
	if err != nil {
		s.Report.Notes = append(s.Report.Notes, Note{Code: CodeNotImported, Detail: fmt.Sprintf("sub-agent trajectory %s not imported: %v", cmp.Or(r.TrajectoryPath, r.TrajectoryID), err)})
		return nil
	}
	return child
}

// pairByPosition pairs the results of step st that name no call
// (source_call_id is optional in ATIF; Harbor's terminus-2 omits it) with
// the step's calls that no result names, by position, when that is
// unambiguous: as many such results as such calls. It returns the call id
// for each result index it pairs.
func pairByPosition(st atifStep) map[int]string {
	if st.Observation == nil || len(st.ToolCalls) == 0 {
		return nil
	}
	named := map[string]bool{}
	var free []int
	for i, r := range st.Observation.Results {
		if r.SourceCallID == "" {
			free = append(free, i)
		} else {
			named[r.SourceCallID] = true
		}
	}
	var calls []string
	for _, tc := range st.ToolCalls {
		if !named[tc.ToolCallID] {
			calls = append(calls, tc.ToolCallID)
		}
	}
	if len(free) == 0 || len(free) != len(calls) {
		return nil
	}
	out := map[int]string{}
	for k, i := range free {
		out[i] = calls[k]
	}
	return out
}

func embedded(subs []atifRawTraj, id string) json.RawMessage {
	for _, raw := range subs {
		var t struct {
			ID string `json:"trajectory_id"`
		}
		if json.Unmarshal(raw, &t) == nil && t.ID == id {
			return raw
		}
	}
	return nil
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// atifText reads a message or result content: a string, or content parts
// whose text parts are joined (images stay out: a part list with an
// image is kept whole in the event's attrs by the caller).
func atifText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	return textOf(raw)
}

// ExportATIF writes the events of session id (its header first) as an
// ATIF-v1.7 trajectory: user messages as user steps, each assistant
// message with its model_call (metrics), its calls and their results
// (observation, paired by source_call_id) as one agent step, compactions
// as system steps with context_management, and every other event as a
// system step that holds it under extra.agentctl.event. Fields ATIF has no
// place for go under extra.agentctl, so Import gives the same events back.
//
// A sub-agent (subagent_started) is also a subagent_trajectory_ref on the
// observation of the step before it, where Harbor puts its refs, so the
// links survive in ATIF's own terms. children, when set, loads a child's
// events: its trajectory is embedded (subagent_trajectories, named by
// trajectory_id), so an import of the one file gives the children back;
// without it, or for a child no longer there, the ref names the child's
// session only.
func ExportATIF(id string, evs []session.Event, children func(id string) ([]session.Event, error)) ([]byte, error) {
	t, err := exportATIF(id, evs, children, map[string]bool{id: true})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(t); err != nil {
		return nil, fmt.Errorf("export atif %s: %w", id, err)
	}
	return buf.Bytes(), nil
}

func exportATIF(id string, evs []session.Event, children func(id string) ([]session.Event, error), seen map[string]bool) (*atifTrajectory, error) {
	if len(evs) == 0 || evs[0].Kind != session.KindSessionStarted {
		return nil, fmt.Errorf("export atif %s: the log does not start with session_started", id)
	}
	x := newATIFExporter(id, evs[0], children, seen)
	for i := 1; i < len(evs); i++ {
		e := evs[i]
		anchor := true
		var err error
		switch e.Kind {
		case session.KindUserMessage:
			anchor = x.user(e)
		case session.KindAssistantMessage:
			i = x.assistant(evs, i)
		case session.KindToolIntent:
			anchor = x.intent(e)
		case session.KindToolResult:
			anchor = x.result(e)
		case session.KindCompaction:
			ce := e
			extra := withAgentctl(marshalAttrs(map[string]any{"context_management": map[string]string{"type": "compaction", "boundary": "replace"}}), agentctlExtra{Event: &ce})
			x.push(atifStep{Timestamp: atifTS(e), Source: "system", Message: jsonString(e.Summary), Extra: extra})
		case session.KindSubagentStarted:
			anchor, err = false, x.subagentStarted(e) // the refs stay on the anchor
		case session.KindSubagentFinished:
			anchor = false
			x.subagentFinished(e)
		default:
			x.system(e, describe(e))
		}
		if err != nil {
			return nil, err
		}
		if anchor {
			x.anchor = len(x.t.Steps) - 1
		}
	}
	x.fin.TotalSteps = len(x.t.Steps)
	x.t.FinalMetrics = mustJSON(x.fin)
	return &x.t, nil
}

// atifExporter is one session being written as a trajectory.
type atifExporter struct {
	id       string
	children func(id string) ([]session.Event, error)
	seen     map[string]bool
	t        atifTrajectory
	// cur is the agent step the latest assistant message made, until
	// another step is pushed.
	cur *atifStep
	// callStep gives, by call id, the index in t.Steps of the step that
	// asked.
	callStep map[string]int
	fin      atifFinal
	// anchor is the step the next sub-agent refs go on (the latest that
	// stands for no sub-agent event); refsAt the result of a step that
	// holds its refs, and refOf where each child's ref is.
	anchor       int
	refsAt       map[int]int
	refOf        map[string]atifRefPlace
	embeddedHere map[string]bool
}

type atifRefPlace struct{ step, result, ref int }

// newATIFExporter starts the trajectory of session id with its header.
func newATIFExporter(id string, hdr session.Event, children func(id string) ([]session.Event, error), seen map[string]bool) *atifExporter {
	x := &atifExporter{id: id, children: children, seen: seen, callStep: map[string]int{}, anchor: -1,
		refsAt: map[int]int{}, refOf: map[string]atifRefPlace{}, embeddedHere: map[string]bool{}}
	x.t = atifTrajectory{SchemaVersion: ATIFVersion, SessionID: id,
		Agent: atifAgent{Name: "agentctl", Version: hdr.AgentctlVersion, ModelName: hdr.Model}}
	if x.t.Agent.Version == "" {
		x.t.Agent.Version = "unknown"
	}
	if hdr.Provider != "" && hdr.Model != "" {
		x.t.Agent.ModelName = hdr.Provider + "/" + hdr.Model
	}
	h := hdr
	x.t.Extra = withAgentctl(nil, agentctlExtra{Header: &h})
	return x
}

// atifTS is e's time as ATIF writes it ("" when unknown).
func atifTS(e session.Event) string {
	if e.TS.IsZero() {
		return ""
	}
	return e.TS.UTC().Format(time.RFC3339Nano)
}

// extraOf is what every exported event keeps under extra.agentctl.
func extraOf(e session.Event) agentctlExtra {
	return agentctlExtra{Seq: e.Seq, TS: atifTS(e), Attrs: e.Attrs}
}

// push appends step s and returns its index.
func (x *atifExporter) push(s atifStep) int {
	s.StepID = len(x.t.Steps) + 1
	x.t.Steps = append(x.t.Steps, s)
	x.cur = nil
	return len(x.t.Steps) - 1
}

// system writes e as a system step that holds it whole.
func (x *atifExporter) system(e session.Event, msg string) {
	ex := agentctlExtra{Event: &e}
	x.push(atifStep{Timestamp: atifTS(e), Source: "system", Message: jsonString(msg), Extra: withAgentctl(nil, ex)})
}

// user writes a user message as a user step, or an unpaired result the
// import kept as one back on the agent step before it (then it is no
// anchor).
func (x *atifExporter) user(e session.Event) bool {
	if unpairedResult(e) && x.cur != nil {
		if x.cur.Observation == nil {
			x.cur.Observation = &atifObs{}
		}
		ue := e
		x.cur.Observation.Results = append(x.cur.Observation.Results, atifResult{Content: jsonString(e.Text), Extra: withAgentctl(nil, agentctlExtra{Event: &ue})})
		return false
	}
	x.push(atifStep{Timestamp: atifTS(e), Source: "user", Message: jsonString(e.Text), Extra: withAgentctl(nil, extraOf(e))})
	return true
}

// assistant writes evs[i], an assistant message, and the model_call after
// it, if any, as one agent step; it returns the index of the last event
// it took.
func (x *atifExporter) assistant(evs []session.Event, i int) int {
	e := evs[i]
	st := atifStep{Timestamp: atifTS(e), Source: "agent", Message: jsonString(e.Text)}
	ax := extraOf(e)
	ax.Refusal, ax.FinishReason = e.Refusal, e.FinishReason
	ax.InputTokens, ax.OutputTokens = e.InputTokens, e.OutputTokens
	for _, c := range e.ToolCalls {
		args := c.Args
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		st.ToolCalls = append(st.ToolCalls, atifToolCall{ToolCallID: c.ID, FunctionName: c.Name, Arguments: args})
	}
	one := 1
	st.LLMCallCount = &one
	if i+1 < len(evs) && evs[i+1].Kind == session.KindModelCall {
		i++
		x.metrics(&st, &ax, evs[i])
	} else {
		zero := 0
		st.LLMCallCount = &zero
	}
	st.Extra = withAgentctl(nil, ax)
	idx := x.push(st)
	x.cur = &x.t.Steps[idx]
	for _, c := range e.ToolCalls {
		x.callStep[c.ID] = idx
	}
	return i
}

// metrics puts model_call c's usage on step st (and the run's totals),
// the rest of c in its extra.
func (x *atifExporter) metrics(st *atifStep, ax *agentctlExtra, c session.Event) {
	mc := c
	mc.InputTokens, mc.OutputTokens, mc.CacheReadInputTokens, mc.CacheCreationInputTokens, mc.CostUSD = 0, 0, 0, 0, 0
	ax.ModelCall = &mc
	st.ModelName = c.Model
	in, out, cached, cost := c.InputTokens, c.OutputTokens, c.CacheReadInputTokens, c.CostUSD
	st.Metrics = &atifMetrics{PromptTokens: &in, CompletionTokens: &out, CachedTokens: &cached, CostUSD: &cost}
	if c.CacheCreationInputTokens > 0 {
		st.Metrics.Extra = marshalAttrs(map[string]any{"cache_creation_input_tokens": c.CacheCreationInputTokens})
	}
	x.fin.TotalPromptTokens += in
	x.fin.TotalCompletionTokens += out
	x.fin.TotalCachedTokens += cached
	x.fin.TotalCostUSD += cost
}

// intent keeps a tool_intent on its call in the step that asked (then it
// is no anchor), or writes it as a system step.
func (x *atifExporter) intent(e session.Event) bool {
	if j, ok := x.callStep[e.CallID]; ok && x.t.Steps[j].Source == "agent" {
		for k := range x.t.Steps[j].ToolCalls {
			tc := &x.t.Steps[j].ToolCalls[k]
			if tc.ToolCallID == e.CallID && agentctlOf(tc.Extra) == nil {
				ie := e
				tc.Extra = withAgentctl(nil, agentctlExtra{Intent: &ie})
				break
			}
		}
		return false
	}
	x.system(e, "tool_intent "+e.Tool)
	return true
}

// result writes a tool_result on the observation of the step that asked
// for the call, or, for a call no step asked for, as a system step (no
// anchor then).
func (x *atifExporter) result(e session.Event) bool {
	j, ok := x.callStep[e.CallID]
	if !ok {
		x.system(e, "tool_result "+e.Tool)
		return false
	}
	st := &x.t.Steps[j]
	if st.Observation == nil {
		st.Observation = &atifObs{}
	}
	rx := extraOf(e)
	rx.Status, rx.Error, rx.LatencyMS, rx.Artifact, rx.Tool = e.Status, e.Error, e.LatencyMS, e.Artifact, e.Tool
	st.Observation.Results = append(st.Observation.Results, atifResult{SourceCallID: e.CallID, Content: jsonString(e.Output), Extra: withAgentctl(nil, rx)})
	// A later request with the same id is a new call.
	delete(x.callStep, e.CallID)
	return true
}

// subagentStarted writes the event as a system step and the child's ref
// on the anchor.
func (x *atifExporter) subagentStarted(e session.Event) error {
	x.system(e, describe(e))
	if e.ChildSessionID == "" {
		return nil
	}
	return x.subagent(e)
}

// subagentFinished writes the event as a system step, and the child's
// output as its ref's summary.
func (x *atifExporter) subagentFinished(e session.Event) {
	x.system(e, describe(e))
	if p, ok := x.refOf[e.ChildSessionID]; ok && e.Output != "" {
		r := &x.t.Steps[p.step].Observation.Results[p.result].SubagentRefs[p.ref]
		r.Extra = marshalAttrs(map[string]any{"summary": e.Output})
	}
}

// subagent puts the ref of e's child on the anchor step's result for
// refs, embedding the child's trajectory the first time it is met.
func (x *atifExporter) subagent(e session.Event) error {
	j := x.anchor
	if j < 0 {
		j = len(x.t.Steps) - 1 // none before: the event's own step
	}
	st := &x.t.Steps[j]
	if st.Observation == nil {
		st.Observation = &atifObs{}
	}
	ri, ok := x.refsAt[j]
	if !ok {
		st.Observation.Results = append(st.Observation.Results, atifResult{})
		ri = len(st.Observation.Results) - 1
		x.refsAt[j] = ri
	}
	r := atifRef{SessionID: e.ChildSessionID}
	switch {
	case x.children == nil:
	case x.embeddedHere[e.ChildSessionID]:
		r.TrajectoryID = e.ChildSessionID // started again: the one embedded
	case !x.seen[e.ChildSessionID]:
		embedded, err := x.embed(e.ChildSessionID)
		if err != nil {
			return err
		}
		if embedded {
			r.TrajectoryID = e.ChildSessionID
		}
	}
	res := &st.Observation.Results[ri]
	res.SubagentRefs = append(res.SubagentRefs, r)
	x.refOf[e.ChildSessionID] = atifRefPlace{j, ri, len(res.SubagentRefs) - 1}
	return nil
}

// embed exports child and embeds its trajectory (false: the child is no
// longer there, and its ref names its session only).
func (x *atifExporter) embed(child string) (bool, error) {
	x.seen[child] = true
	cevs, err := x.children(child)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("export atif %s: sub-agent %s: %w", x.id, child, err)
	}
	ct, err := exportATIF(child, cevs, x.children, x.seen)
	if err != nil {
		return false, err
	}
	ct.TrajectoryID = child
	raw, err := json.Marshal(ct)
	if err != nil {
		return false, fmt.Errorf("export atif %s: %w", child, err)
	}
	x.t.Subagents = append(x.t.Subagents, raw)
	x.embeddedHere[child] = true
	return true, nil
}

// unpairedResult reports whether e is an ATIF result that named no call,
// as the import keeps it.
func unpairedResult(e session.Event) bool {
	if e.Kind != session.KindUserMessage || len(e.Attrs) == 0 {
		return false
	}
	var a struct {
		Obs bool `json:"atif_observation"`
	}
	return json.Unmarshal(e.Attrs, &a) == nil && a.Obs
}

func jsonString(s string) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// describe is the message of a system step that stands for an event.
func describe(e session.Event) string {
	parts := []string{string(e.Kind)}
	for _, s := range []string{e.Status, e.Outcome, e.Tool, e.Reason, e.Error} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return excerpt(strings.Join(slices.Compact(parts), " "), 200)
}

func init() {
	Register(Format{
		Name:   FormatATIF,
		Doc:    "ATIF trajectory (trajectory.json), with its sub-agents",
		Exts:   []string{".json"},
		Detect: detectATIF,
		Import: func(path string) ([]*Session, error) { return one(importATIFFile(path, map[string]bool{})) },
	})
}

// detectATIF claims a JSON object whose schema_version names ATIF.
func detectATIF(h *Head) bool {
	_, vals, ok := h.TopKeys()
	return ok && strings.HasPrefix(StringOf(vals, "schema_version"), "ATIF-")
}
