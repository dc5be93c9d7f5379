package transcript

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/agentctl/agentctl/internal/modelapi"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/session"
)

// Inspect AI eval logs (corpus FORMATS.md section 2.5): an EvalLog (.json)
// or a zip of its parts (.eval). Each sample and epoch is one session.

type inspectLog struct {
	Version int    `json:"version"`
	Status  string `json:"status"`
	Eval    struct {
		EvalID   string `json:"eval_id"`
		RunID    string `json:"run_id"`
		Task     string `json:"task"`
		Model    string `json:"model"`
		Packages struct {
			Inspect string `json:"inspect_ai"`
		} `json:"packages"`
	} `json:"eval"`
	Error   json.RawMessage   `json:"error"`
	Samples []json.RawMessage `json:"samples"`
}

type inspectSample struct {
	ID       json.RawMessage `json:"id"`
	Epoch    int             `json:"epoch"`
	UUID     string          `json:"uuid"`
	Messages []struct {
		ID        string          `json:"id"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		Model     string          `json:"model"`
		ToolCalls []struct {
			ID        string          `json:"id"`
			Function  string          `json:"function"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"tool_calls"`
		ToolCallID string          `json:"tool_call_id"`
		Function   string          `json:"function"`
		Error      json.RawMessage `json:"error"`
	} `json:"messages"`
	Events []struct {
		Event     string          `json:"event"`
		Timestamp string          `json:"timestamp"`
		Completed string          `json:"completed"`
		Model     string          `json:"model"`
		Output    json.RawMessage `json:"output"`
		ID        string          `json:"id"`
		Function  string          `json:"function"`
		Error     json.RawMessage `json:"error"`
	} `json:"events"`
	Scores      map[string]json.RawMessage `json:"scores"`
	Error       json.RawMessage            `json:"error"`
	Attachments map[string]string          `json:"attachments"`
}

type inspectOutput struct {
	Model   string `json:"model"`
	Choices []struct {
		StopReason string `json:"stop_reason"`
		Message    struct {
			ID string `json:"id"`
		} `json:"message"`
	} `json:"choices"`
	Usage *struct {
		InputTokens      int64    `json:"input_tokens"`
		OutputTokens     int64    `json:"output_tokens"`
		CacheRead        int64    `json:"input_tokens_cache_read"`
		CacheWrite       int64    `json:"input_tokens_cache_write"`
		ReasoningTokens  int64    `json:"reasoning_tokens"`
		TotalTokensCount int64    `json:"total_tokens"`
		TotalCost        *float64 `json:"total_cost"`
	} `json:"usage"`
}

// bill is the output's usage as the live provider counts it (nil: none).
func (o *inspectOutput) bill(prov string) *pricing.Usage {
	u := o.Usage
	if u == nil {
		return nil
	}
	bill := pricing.Usage{Input: u.InputTokens, CacheRead: u.CacheRead, CacheCreation: u.CacheWrite, Output: u.OutputTokens}
	if modelapi.InputExcludesCache(prov) {
		// Inspect keeps the provider's input_tokens (Anthropic's is
		// without the cache); billed input holds the cache too.
		bill.Input += u.CacheRead + u.CacheWrite
	}
	return &bill
}

// importInspect imports each sample and epoch of an Inspect log as a
// session of its own.
func importInspect(p string) ([]*Session, error) {
	data, file, err := readSource(p)
	if err != nil {
		return nil, err
	}
	log, samples, err := readInspect(data, p)
	if err != nil {
		return nil, err
	}
	if log.Eval.Task == "" && log.Eval.Model == "" {
		return nil, fmt.Errorf("import inspect %s: no eval spec; is this an Inspect log?", p)
	}
	if len(samples) == 0 {
		return nil, fmt.Errorf("import inspect %s: the log holds no samples (status %s)", p, log.Status)
	}
	var out []*Session
	for i, raw := range samples {
		s, err := inspectSession(data, file, log, raw)
		if err != nil {
			return nil, fmt.Errorf("import inspect %s: sample %d: %w", p, i+1, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// readInspect decodes a log: an EvalLog (.json) with its samples, or a
// zip of its parts (.eval).
func readInspect(data []byte, p string) (*inspectLog, []json.RawMessage, error) {
	var log inspectLog
	if bytes.HasPrefix(data, []byte("PK\x03\x04")) {
		return readEval(data, p)
	}
	if err := json.Unmarshal(data, &log); err != nil {
		return nil, nil, fmt.Errorf("import inspect %s: %w", p, err)
	}
	return &log, log.Samples, nil
}

// readEval decodes an .eval archive: its header.json (or, for a log still
// being written, _journal/start.json) and its samples/*.json in order.
func readEval(data []byte, p string) (*inspectLog, []json.RawMessage, error) {
	var log inspectLog
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, nil, fmt.Errorf("import inspect %s: %w", p, err)
	}
	var names []string
	files := map[string]*zip.File{}
	for _, f := range zr.File {
		files[f.Name] = f
		if strings.HasPrefix(f.Name, "samples/") && strings.HasSuffix(f.Name, ".json") {
			names = append(names, f.Name)
		}
	}
	hf := files["header.json"]
	if hf == nil {
		hf = files["_journal/start.json"]
	}
	if hf == nil {
		return nil, nil, fmt.Errorf("import inspect %s: the .eval archive has no header.json", p)
	}
	hb, err := readZipFile(hf)
	if err != nil {
		return nil, nil, fmt.Errorf("import inspect %s: %w", p, err)
	}
	if err := json.Unmarshal(hb, &log); err != nil {
		return nil, nil, fmt.Errorf("import inspect %s: header.json: %w", p, err)
	}
	sortSampleNames(names)
	var samples []json.RawMessage
	for _, n := range names {
		b, err := readZipFile(files[n])
		if err != nil {
			return nil, nil, fmt.Errorf("import inspect %s: %s: %w", p, n, err)
		}
		samples = append(samples, b)
	}
	return &log, samples, nil
}

func readZipFile(f *zip.File) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// sortSampleNames orders samples/<id>_epoch_<n>.json by id, then epoch,
// numerically where the id is a number.
func sortSampleNames(names []string) {
	key := func(n string) (string, int, int) {
		base := strings.TrimSuffix(path.Base(n), ".json")
		id, ep, _ := strings.Cut(base, "_epoch_")
		e, _ := strconv.Atoi(ep)
		num, err := strconv.Atoi(id)
		if err != nil {
			num = -1
		}
		return id, num, e
	}
	sort.Slice(names, func(i, j int) bool {
		a, an, ae := key(names[i])
		b, bn, be := key(names[j])
		if an != bn {
			return an < bn
		}
		if a != b {
			return a < b
		}
		return ae < be
	})
}

// inspectSession imports one sample: its messages as the conversation,
// each assistant message with the model event that produced it (usage,
// time) and each tool message with its tool event (time, latency), then
// the model events no message shows, the scores and the sample's error.
func inspectSession(data []byte, file string, log *inspectLog, raw json.RawMessage) (*Session, error) {
	x := &inspectImport{log: log, modelByMsg: map[string]int{}, toolByID: map[string]int{},
		outputs: map[int]*inspectOutput{}, used: map[int]bool{}}
	if err := json.Unmarshal(raw, &x.s); err != nil {
		return nil, err
	}
	id := strings.Trim(string(x.s.ID), `"`)
	part := fmt.Sprintf("sample %s epoch %d", id, x.s.Epoch)
	x.b = newBuilder(FormatInspect, file, data)
	x.b.records = len(x.s.Messages) + len(x.s.Events)
	x.b.notRecorded("tool definitions")
	x.header(part)
	x.indexEvents()
	for mi := range x.s.Messages {
		x.message(mi)
	}
	x.unanswered()
	x.scores()
	return x.b.finish(part), nil
}

// inspectImport is one sample being imported, with its events indexed.
type inspectImport struct {
	b           *builder
	log         *inspectLog
	s           inspectSample
	prov, model string
	// Model events by the id of the message they produced, and in order;
	// tool events by call id; the outputs of model events by index.
	modelByMsg map[string]int
	modelOrder []int
	toolByID   map[string]int
	outputs    map[int]*inspectOutput
	// used: model events a message took; nextModel, where the next
	// message without a model event of its id looks.
	used      map[int]bool
	nextModel int
}

// att resolves Inspect's attachment:// references in str.
func (x *inspectImport) att(str string) string {
	if !strings.Contains(str, "attachment://") {
		return str
	}
	for h, v := range x.s.Attachments {
		str = strings.ReplaceAll(str, "attachment://"+h, v)
	}
	return str
}

func (x *inspectImport) attJSON(r json.RawMessage) json.RawMessage {
	return session.MapJSONStrings(r, x.att)
}

// header names the eval, the task, the model and the sample's end state.
func (x *inspectImport) header(part string) {
	b, log, s := x.b, x.log, &x.s
	x.prov, x.model = splitModel(log.Eval.Model, "")
	b.hdr.Provider, b.hdr.Model = x.prov, x.model
	b.hdr.Name = fmt.Sprintf("inspect %s %s", log.Eval.Task, part)
	b.attrs["source_session_id"] = log.Eval.EvalID
	if log.Eval.EvalID == "" {
		b.attrs["source_session_id"] = log.Eval.RunID
	}
	b.attrs["task"] = log.Eval.Task
	if log.Eval.Packages.Inspect != "" {
		b.attrs["source_version"] = log.Eval.Packages.Inspect
	}
	if s.UUID != "" {
		b.attrs["sample_uuid"] = s.UUID
	}
	status := log.Status
	if msg, ok := inspectError(s.Error); ok {
		status = "error: " + excerpt(msg, 200)
	}
	if status != "" {
		b.attrs["source_status"] = status
	}
}

// inspectError reads the message of a sample's error, if it has one.
func inspectError(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var e struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(raw, &e)
	return e.Message, true
}

// indexEvents indexes the model and tool events; the first event's time
// is the header's.
func (x *inspectImport) indexEvents() {
	for i, e := range x.s.Events {
		if x.b.hdr.TS.IsZero() {
			x.b.hdr.TS, _ = parseTime(e.Timestamp)
		}
		switch e.Event {
		case "model":
			var o inspectOutput
			if len(e.Output) > 0 && e.Output[0] == '{' && json.Unmarshal(e.Output, &o) == nil {
				x.outputs[i] = &o
			}
			if len(o.Choices) > 0 && o.Choices[0].Message.ID != "" {
				x.modelByMsg[o.Choices[0].Message.ID] = i
			}
			x.modelOrder = append(x.modelOrder, i)
		case "tool":
			x.toolByID[e.ID] = i
		}
	}
}

// message imports message mi.
func (x *inspectImport) message(mi int) {
	b, m, n := x.b, &x.s.Messages[mi], mi+1
	switch m.Role {
	case "system":
		if b.hdr.System == "" && len(b.evs) == 0 {
			b.hdr.System = x.att(textOf(m.Content))
		} else {
			b.add(session.Event{Kind: session.KindUserMessage, Text: x.att(textOf(m.Content)), Attrs: marshalAttrs(map[string]any{"role": "system"})})
		}
	case "user":
		b.add(session.Event{Kind: session.KindUserMessage, Text: x.att(textOf(m.Content)), Attrs: nonText(x.attJSON(m.Content))})
	case "assistant":
		x.assistant(mi)
	case "tool":
		x.tool(mi)
	default:
		b.note(n, CodeUnknownRecord, "message role %q; skipped", m.Role)
	}
}

// modelEvent finds the model event that produced message id: the one
// whose output names it, else the next one no message took.
func (x *inspectImport) modelEvent(id string) (int, bool) {
	if ei, ok := x.modelByMsg[id]; ok {
		return ei, true
	}
	for x.nextModel < len(x.modelOrder) && x.used[x.modelOrder[x.nextModel]] {
		x.nextModel++
	}
	if x.nextModel < len(x.modelOrder) {
		return x.modelOrder[x.nextModel], true
	}
	return 0, false
}

// assistant imports an assistant message as a response, with the usage,
// time and latency of its model event, and its calls' intents at their
// tool events' times.
func (x *inspectImport) assistant(mi int) {
	b, m, n := x.b, &x.s.Messages[mi], mi+1
	t := turn{text: x.att(textOf(m.Content)), provider: x.prov, model: x.model, responseID: m.ID}
	if a := nonText(x.attJSON(m.Content)); len(a) > 0 {
		t.attrs = map[string]any{}
		_ = json.Unmarshal(a, &t.attrs)
	}
	if m.Model != "" {
		t.model = m.Model
	}
	if ei, ok := x.modelEvent(m.ID); ok {
		x.used[ei] = true
		x.fromModelEvent(&t, ei)
	} else {
		b.note(n, CodeKeptInAttrs, "assistant message %s has no model event (no usage or time)", m.ID)
	}
	for _, tc := range m.ToolCalls {
		t.calls = append(t.calls, session.ToolCall{ID: tc.ID, Name: tc.Function, Args: argsObject(x.attJSON(tc.Arguments))})
	}
	b.addTurn(t, n)
	if lat, ok := t.callAttrs["latency_ms"].(int64); ok {
		b.evs[b.lastCall].LatencyMS = lat
	}
	for _, tc := range t.calls {
		ts := t.ts
		if ti, ok := x.toolByID[tc.ID]; ok {
			ts, _ = parseTime(x.s.Events[ti].Timestamp)
		}
		b.intent(tc, ts)
	}
}

// fromModelEvent gives t the time, finish reason, usage, cost and latency
// of model event ei.
func (x *inspectImport) fromModelEvent(t *turn, ei int) {
	e := x.s.Events[ei]
	t.ts, _ = parseTime(e.Timestamp)
	if o := x.outputs[ei]; o != nil {
		if len(o.Choices) > 0 {
			t.finish = o.Choices[0].StopReason
		}
		if t.usage = o.bill(x.prov); t.usage != nil {
			t.sourceCost = o.Usage.TotalCost
		}
	}
	if end, ok := parseTime(e.Completed); ok && !t.ts.IsZero() {
		t.callAttrs = map[string]any{"latency_ms": end.Sub(t.ts).Milliseconds()}
	}
}

// tool imports a tool message as its call's result, timed by its tool
// event (an error when the message has one).
func (x *inspectImport) tool(mi int) {
	b, m, n := x.b, &x.s.Messages[mi], mi+1
	status, errText := session.ResultOK, ""
	if len(m.Error) > 0 && string(m.Error) != "null" {
		var e struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(m.Error, &e)
		status, errText = session.ResultError, strings.TrimSpace(e.Type+": "+e.Message)
	}
	ts := b.lastTS()
	var lat int64
	if ti, ok := x.toolByID[m.ToolCallID]; ok {
		start, _ := parseTime(x.s.Events[ti].Timestamp)
		if end, ok := parseTime(x.s.Events[ti].Completed); ok {
			ts, lat = end, end.Sub(start).Milliseconds()
		}
	}
	b.result(n, m.ToolCallID, x.att(textOf(m.Content)), status, errText, ts, lat, nil)
}

// unanswered adds the model events whose output is not among the
// messages (a scorer's model calls, retries): they were still billed,
// each is a model_call of its own, with no answer in the conversation.
func (x *inspectImport) unanswered() {
	for i, e := range x.s.Events {
		if e.Event != "model" || x.used[i] {
			continue
		}
		ts, _ := parseTime(e.Timestamp)
		mprov, mmodel := splitModel(e.Model, x.prov)
		c := session.Event{Kind: session.KindModelCall, TS: ts, Provider: mprov, Model: mmodel,
			Attrs: marshalAttrs(map[string]any{"unanswered": "a model event whose output is not among the sample's messages (a scorer's call, or a retry)"})}
		if o := x.outputs[i]; o != nil {
			if len(o.Choices) > 0 {
				c.FinishReason, c.ResponseID = o.Choices[0].StopReason, o.Choices[0].Message.ID
			}
			if u := o.bill(mprov); u != nil {
				setUsage(&c, *u)
				c.CostUSD = costOf(mmodel, *u, o.Usage.TotalCost)
			}
		}
		if end, ok := parseTime(e.Completed); ok && !ts.IsZero() {
			c.LatencyMS = end.Sub(ts).Milliseconds()
		}
		x.b.add(c)
	}
}

// scores adds one evaluation per scorer, after the conversation, then the
// sample's error.
func (x *inspectImport) scores() {
	b, s := x.b, &x.s
	var names []string
	for k := range s.Scores {
		names = append(names, k)
	}
	sort.Strings(names)
	last := b.lastTS()
	for _, k := range names {
		var sc struct {
			Value       json.RawMessage `json:"value"`
			Answer      string          `json:"answer"`
			Explanation string          `json:"explanation"`
		}
		_ = json.Unmarshal(s.Scores[k], &sc)
		outcome := ""
		switch strings.Trim(string(sc.Value), `"`) {
		case "C", "1", "1.0", "true":
			outcome = "pass"
		case "I", "0", "0.0", "false":
			outcome = "fail"
		}
		b.add(session.Event{Kind: session.KindEvaluation, TS: last, Outcome: outcome,
			Evidence: fmt.Sprintf("%s: %s", k, sc.Value), Attrs: marshalAttrs(map[string]any{"scorer": k, "score": s.Scores[k]})})
	}
	if msg, ok := inspectError(s.Error); ok {
		b.add(session.Event{Kind: session.KindError, TS: last, Reason: "source_error", Error: msg})
	}
}

// nonText returns the content blocks that are not text (images,
// reasoning) as attrs {"<type>": [blocks]}, or nil.
func nonText(raw json.RawMessage) json.RawMessage {
	m := map[string]any{}
	for _, x := range rawBlocks(raw) {
		var t struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(x, &t) == nil && t.Type != "text" && t.Type != "" {
			list, _ := m[t.Type].([]json.RawMessage)
			m[t.Type] = append(list, x)
		}
	}
	return marshalAttrs(m)
}

func init() {
	Register(Format{
		Name:   FormatInspect,
		Doc:    "Inspect AI eval log (.eval or .json): one session per sample",
		Exts:   []string{".eval", ".json"},
		Detect: detectInspect,
		Import: importInspect,
	})
}

// detectInspect claims a zip archive holding an eval log's members (an
// .eval: its first member is header.json, or _journal/ while written) or
// a JSON object with the log's "version" and "eval".
func detectInspect(h *Head) bool {
	if bytes.HasPrefix(h.Bytes, []byte("PK\x03\x04")) {
		return bytes.Contains(h.Bytes, []byte("header.json")) || bytes.Contains(h.Bytes, []byte("_journal/")) ||
			bytes.Contains(h.Bytes, []byte("samples/"))
	}
	keys, _, ok := h.TopKeys()
	return ok && slices.Contains(keys, "version") && slices.Contains(keys, "eval")
}
