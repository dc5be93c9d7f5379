package transcript

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"

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
	if prov == "anthropic" {
		// Inspect keeps Anthropic's input_tokens (without the cache);
		// billed input holds the cache too.
		bill.Input += u.CacheRead + u.CacheWrite
	}
	return &bill
}

func importInspect(p string) ([]*Session, error) {
	data, file, err := readSource(p)
	if err != nil {
		return nil, err
	}
	var log inspectLog
	var samples []json.RawMessage
	if bytes.HasPrefix(data, []byte("PK\x03\x04")) {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return nil, fmt.Errorf("import inspect %s: %w", p, err)
		}
		var names []string
		files := map[string]*zip.File{}
		for _, f := range zr.File {
			files[f.Name] = f
			if strings.HasPrefix(f.Name, "samples/") && strings.HasSuffix(f.Name, ".json") {
				names = append(names, f.Name)
			}
		}
		read := func(f *zip.File) ([]byte, error) {
			rc, err := f.Open()
			if err != nil {
				return nil, err
			}
			defer rc.Close()
			return io.ReadAll(rc)
		}
		hf := files["header.json"]
		if hf == nil {
			hf = files["_journal/start.json"]
		}
		if hf == nil {
			return nil, fmt.Errorf("import inspect %s: the .eval archive has no header.json", p)
		}
		hb, err := read(hf)
		if err != nil {
			return nil, fmt.Errorf("import inspect %s: %w", p, err)
		}
		if err := json.Unmarshal(hb, &log); err != nil {
			return nil, fmt.Errorf("import inspect %s: header.json: %w", p, err)
		}
		sortSampleNames(names)
		for _, n := range names {
			b, err := read(files[n])
			if err != nil {
				return nil, fmt.Errorf("import inspect %s: %s: %w", p, n, err)
			}
			samples = append(samples, b)
		}
	} else {
		if err := json.Unmarshal(data, &log); err != nil {
			return nil, fmt.Errorf("import inspect %s: %w", p, err)
		}
		samples = log.Samples
	}
	if log.Eval.Task == "" && log.Eval.Model == "" {
		return nil, fmt.Errorf("import inspect %s: no eval spec; is this an Inspect log?", p)
	}
	if len(samples) == 0 {
		return nil, fmt.Errorf("import inspect %s: the log holds no samples (status %s)", p, log.Status)
	}
	var out []*Session
	for i, raw := range samples {
		s, err := inspectSession(data, file, &log, raw, i)
		if err != nil {
			return nil, fmt.Errorf("import inspect %s: sample %d: %w", p, i+1, err)
		}
		out = append(out, s)
	}
	return out, nil
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

func inspectSession(data []byte, file string, log *inspectLog, raw json.RawMessage, index int) (*Session, error) {
	var s inspectSample
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	id := strings.Trim(string(s.ID), `"`)
	part := fmt.Sprintf("sample %s epoch %d", id, s.Epoch)
	b := newBuilder(FormatInspect, file, data)
	b.records = len(s.Messages) + len(s.Events)
	b.notRecorded("tool definitions")
	att := func(str string) string {
		if !strings.Contains(str, "attachment://") {
			return str
		}
		for h, v := range s.Attachments {
			str = strings.ReplaceAll(str, "attachment://"+h, v)
		}
		return str
	}
	attJSON := func(r json.RawMessage) json.RawMessage { return session.MapJSONStrings(r, att) }
	prov, model := splitModel(log.Eval.Model, "")
	b.hdr.Provider, b.hdr.Model = prov, model
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
	if len(s.Error) > 0 && string(s.Error) != "null" {
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(s.Error, &e)
		status = "error: " + clip(e.Message, 200)
	}
	if status != "" {
		b.attrs["source_status"] = status
	}
	// Model events by the id of the message they produced; tool events by
	// call id.
	modelByMsg := map[string]int{}
	var modelOrder []int
	toolByID := map[string]int{}
	outputs := map[int]*inspectOutput{}
	for i, e := range s.Events {
		if b.hdr.TS.IsZero() {
			b.hdr.TS, _ = parseTime(e.Timestamp)
		}
		switch e.Event {
		case "model":
			var o inspectOutput
			if len(e.Output) > 0 && e.Output[0] == '{' && json.Unmarshal(e.Output, &o) == nil {
				outputs[i] = &o
			}
			if len(o.Choices) > 0 && o.Choices[0].Message.ID != "" {
				modelByMsg[o.Choices[0].Message.ID] = i
			}
			modelOrder = append(modelOrder, i)
		case "tool":
			toolByID[e.ID] = i
		}
	}
	used := map[int]bool{}
	nextModel := 0
	for mi, m := range s.Messages {
		n := mi + 1
		switch m.Role {
		case "system":
			if b.hdr.System == "" && len(b.evs) == 0 {
				b.hdr.System = att(textOf(m.Content))
			} else {
				b.add(session.Event{Kind: session.KindUserMessage, Text: att(textOf(m.Content)), Attrs: marshalAttrs(map[string]any{"role": "system"})})
			}
		case "user":
			b.add(session.Event{Kind: session.KindUserMessage, Text: att(textOf(m.Content)), Attrs: nonText(attJSON(m.Content))})
		case "assistant":
			ei, ok := modelByMsg[m.ID]
			if !ok {
				for nextModel < len(modelOrder) && used[modelOrder[nextModel]] {
					nextModel++
				}
				if nextModel < len(modelOrder) {
					ei, ok = modelOrder[nextModel], true
				}
			}
			t := turn{text: att(textOf(m.Content)), provider: prov, model: model, responseID: m.ID}
			if a := nonText(attJSON(m.Content)); len(a) > 0 {
				t.attrs = map[string]any{}
				_ = json.Unmarshal(a, &t.attrs)
			}
			if m.Model != "" {
				t.model = m.Model
			}
			if ok {
				used[ei] = true
				e := s.Events[ei]
				t.ts, _ = parseTime(e.Timestamp)
				if o := outputs[ei]; o != nil {
					if len(o.Choices) > 0 {
						t.finish = o.Choices[0].StopReason
					}
					if t.usage = o.bill(prov); t.usage != nil {
						t.sourceCost = o.Usage.TotalCost
					}
				}
				if end, ok := parseTime(e.Completed); ok && !t.ts.IsZero() {
					t.callAttrs = map[string]any{"latency_ms": end.Sub(t.ts).Milliseconds()}
				}
			} else {
				b.note(n, CodeKeptInAttrs, "assistant message %s has no model event (no usage or time)", m.ID)
			}
			for _, tc := range m.ToolCalls {
				t.calls = append(t.calls, session.ToolCall{ID: tc.ID, Name: tc.Function, Args: argsObject(attJSON(tc.Arguments))})
			}
			b.addTurn(t, n)
			if lat, ok := t.callAttrs["latency_ms"].(int64); ok {
				b.evs[len(b.evs)-1].LatencyMS = lat
			}
			for _, tc := range t.calls {
				ts := t.ts
				if ti, ok := toolByID[tc.ID]; ok {
					ts, _ = parseTime(s.Events[ti].Timestamp)
				}
				b.intent(tc, ts)
			}
		case "tool":
			status, errText := session.ResultOK, ""
			if len(m.Error) > 0 && string(m.Error) != "null" {
				var e struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				}
				_ = json.Unmarshal(m.Error, &e)
				status, errText = session.ResultError, strings.TrimSpace(e.Type+": "+e.Message)
			}
			var ts = b.evs[len(b.evs)-1].TS
			var lat int64
			if ti, ok := toolByID[m.ToolCallID]; ok {
				start, _ := parseTime(s.Events[ti].Timestamp)
				if end, ok := parseTime(s.Events[ti].Completed); ok {
					ts, lat = end, end.Sub(start).Milliseconds()
				}
			}
			b.result(n, m.ToolCallID, att(textOf(m.Content)), status, errText, ts, lat, nil)
		default:
			b.note(n, CodeUnknownRecord, "message role %q; skipped", m.Role)
		}
	}
	// Model events whose output is not among the messages (a scorer's
	// model calls, retries) were still billed: each is a model_call of its
	// own, with no answer in the conversation.
	for i, e := range s.Events {
		if e.Event != "model" || used[i] {
			continue
		}
		ts, _ := parseTime(e.Timestamp)
		mprov, mmodel := splitModel(e.Model, prov)
		c := session.Event{Kind: session.KindModelCall, TS: ts, Provider: mprov, Model: mmodel,
			Attrs: marshalAttrs(map[string]any{"unanswered": "a model event whose output is not among the sample's messages (a scorer's call, or a retry)"})}
		if o := outputs[i]; o != nil {
			if len(o.Choices) > 0 {
				c.FinishReason, c.ResponseID = o.Choices[0].StopReason, o.Choices[0].Message.ID
			}
			if u := o.bill(mprov); u != nil {
				c.InputTokens, c.OutputTokens = u.Input, u.Output
				c.CacheReadInputTokens, c.CacheCreationInputTokens = u.CacheRead, u.CacheCreation
				c.CostUSD = costOf(mmodel, *u, o.Usage.TotalCost)
			}
		}
		if end, ok := parseTime(e.Completed); ok && !ts.IsZero() {
			c.LatencyMS = end.Sub(ts).Milliseconds()
		}
		b.add(c)
	}
	// Scores: one evaluation per scorer, after the conversation.
	var names []string
	for k := range s.Scores {
		names = append(names, k)
	}
	sort.Strings(names)
	var last = b.evs[len(b.evs)-1].TS
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
	if len(s.Error) > 0 && string(s.Error) != "null" {
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(s.Error, &e)
		b.add(session.Event{Kind: session.KindError, TS: last, Reason: "source_error", Error: e.Message})
	}
	_ = index
	return b.finish(part), nil
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
