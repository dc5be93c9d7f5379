package transcript

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/vfs"
)

// The formats, as `agentctl import FORMAT` and the header's imported_from
// name them.
const (
	FormatClaudeCode = "claude-code"
	FormatCodex      = "codex"
	FormatSWEAgent   = "swe-agent"
	FormatOpenHands  = "openhands"
	FormatInspect    = "inspect"
	FormatATIF       = "atif"
	// FormatAuto detects the format of each file (Detect).
	FormatAuto = "auto"
)

// Report codes (see the package documentation).
const (
	CodeTornLine      = "torn_line"
	CodeBadLine       = "bad_line"
	CodeUnknownRecord = "unknown_record"
	CodeSkipped       = "skipped"
	CodeKeptInAttrs   = "kept_in_attrs"
	CodeOrphanResult  = "orphan_result"
	CodeNoResult      = "no_result"
	CodeFork          = "fork"
	CodeSubagent      = "subagent"
	CodeNotImported   = "not_imported"
)

// Session is one imported session: its events, header first (seq 1, dense
// seqs), and what the import found. Children are sub-agent sessions,
// linked to this one (their header's parent_session_id, this one's
// subagent_started events).
type Session struct {
	Events   []session.Event
	Report   Report
	Children []*Session
}

// ID is the session's id (the header's).
func (s *Session) ID() string { return s.Events[0].SessionID }

// Report is what importing one session found. Its JSON form is the --json
// output of `agentctl import` (one object per session) and only grows.
type Report struct {
	Format          string `json:"format"`
	File            string `json:"file"`
	SHA256          string `json:"sha256"`
	Part            string `json:"part,omitempty"`
	SessionID       string `json:"session_id"`
	ParentSessionID string `json:"parent_session_id,omitempty"`
	// Existing: a session with this id was already imported; nothing was
	// written.
	Existing bool `json:"existing"`
	// Records is how many records (lines, steps, events) the source held.
	Records     int            `json:"records"`
	Events      int            `json:"events"`
	Counts      map[string]int `json:"counts"`
	NotRecorded []string       `json:"not_recorded"`
	Notes       []Note         `json:"notes"`
	// Error: the file was not imported, and why (no session_id then).
	Error string `json:"error,omitempty"`
	// Ignored: the file, met in a folder imported as a named format, is
	// not of that format (a SWE-agent run's .log and .patch files): named
	// with why, but nothing of the format was lost, so the import is not
	// incomplete for it.
	Ignored bool `json:"ignored,omitempty"`
}

// Lost counts the records of r that were not imported: the notes coded
// torn_line, bad_line, unknown_record and not_imported. (skipped records
// are not part of the conversation; fork lines are a branch it left.)
func Lost(r Report) int {
	n := 0
	for _, x := range r.Notes {
		switch x.Code {
		case CodeTornLine, CodeBadLine, CodeUnknownRecord, CodeNotImported:
			n++
		}
	}
	return n
}

// Note is one thing the import did not map to a field, or found wrong.
// Line is the source's line (JSONL) or record index (from 1), 0 when it
// concerns the whole file.
type Note struct {
	Line   int    `json:"line,omitempty"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

func one(s *Session, err error) ([]*Session, error) {
	if err != nil {
		return nil, err
	}
	return []*Session{s}, nil
}

// openRegular opens path for reading, a regular file only: a named pipe
// (opened without blocking, so no writer is waited for) or a device in a
// folder being imported is refused, not read until it ends.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("import %s: not a regular file (%s); only files are imported", path, vfs.Kind(fi.Mode()))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// builder gathers one session's events. Seqs are set as they are added
// (the header is seq 1), so events can name earlier seqs (through).
type builder struct {
	format string
	hdr    session.Event
	attrs  map[string]any
	evs    []session.Event
	notes  []Note
	notRec []string
	// calls by id: the tool asked for, and whether a result came.
	calls    map[string]*callInfo
	callList []string
	records  int
	// lastCall is the index in evs of the latest model_call addTurn
	// wrote (-1: none yet).
	lastCall int
}

type callInfo struct {
	tool     string
	answered bool
	line     int
}

func newBuilder(format, file string, content []byte) *builder {
	sum := sha256.Sum256(content)
	b := &builder{format: format, calls: map[string]*callInfo{}, lastCall: -1}
	b.hdr = session.Event{Kind: session.KindSessionStarted}
	b.attrs = map[string]any{"imported_from": format, "source_file": file, "source_sha256": hex.EncodeToString(sum[:])}
	return b
}

// sessionID derives the id from the format, part and content hash.
func sessionID(format, part, sha string) string {
	h := sha256.Sum256([]byte("agentctl import\x00" + format + "\x00" + part + "\x00" + sha))
	return hex.EncodeToString(h[:8])
}

func (b *builder) add(e session.Event) int64 {
	e.Seq = int64(len(b.evs) + 2)
	b.evs = append(b.evs, e)
	return e.Seq
}

// lastTS is the time of the latest event (the header's, when none).
func (b *builder) lastTS() time.Time {
	if len(b.evs) == 0 {
		return b.hdr.TS
	}
	return b.evs[len(b.evs)-1].TS
}

// lastSeq is the seq of the latest event (1, the header, when none).
func (b *builder) lastSeq() int64 { return int64(len(b.evs) + 1) }

func (b *builder) note(line int, code, format string, args ...any) {
	b.notes = append(b.notes, Note{Line: line, Code: code, Detail: fmt.Sprintf(format, args...)})
}

func (b *builder) notRecorded(what ...string) {
	for _, w := range what {
		if !slices.Contains(b.notRec, w) {
			b.notRec = append(b.notRec, w)
		}
	}
}

// turn is one API response.
type turn struct {
	ts         time.Time
	text       string
	calls      []session.ToolCall
	provider   string
	model      string
	responseID string
	finish     string
	usage      *pricing.Usage
	// attrs of the assistant_message (verbatim parts that map to no
	// field) and of the model_call.
	attrs     map[string]any
	callAttrs map[string]any
	// noCall: no model_call is written (a step that was no inference).
	noCall bool
	// sourceCost is the cost the source recorded, if it did: the cost
	// when the price table does not know the model.
	sourceCost *float64
}

// costOf prices usage u of model from the table, or, for a model the table
// does not know, takes the cost the source recorded (nil: none, 0).
func costOf(model string, u pricing.Usage, source *float64) float64 {
	if _, ok := pricing.PriceOf(priceModel(model)); !ok && source != nil {
		return *source
	}
	return pricing.CostOf(priceModel(model), u)
}

// addTurn writes the assistant_message and model_call of one response:
// usage as the live provider counts it, cost from the price table.
func (b *builder) addTurn(t turn, line int) {
	a := session.Event{Kind: session.KindAssistantMessage, TS: t.ts, Text: t.text, ToolCalls: t.calls, Attrs: marshalAttrs(t.attrs)}
	c := session.Event{Kind: session.KindModelCall, TS: t.ts, Provider: t.provider, Model: t.model, ResponseID: t.responseID,
		FinishReason: t.finish, Attrs: marshalAttrs(t.callAttrs)}
	if t.finish == "length" || t.finish == "max_tokens" {
		a.FinishReason = "length"
	}
	if t.sourceCost != nil {
		// The source's own price of the call, beside agentctl's.
		attrs := maps.Clone(t.callAttrs)
		if attrs == nil {
			attrs = map[string]any{}
		}
		attrs["source_cost_usd"] = *t.sourceCost
		c.Attrs = marshalAttrs(attrs)
	}
	if u := t.usage; u != nil {
		setUsage(&c, *u)
		c.CostUSD = costOf(t.model, *u, t.sourceCost)
		a.InputTokens, a.OutputTokens = u.Input, u.Output
	}
	b.add(a)
	if !t.noCall {
		b.add(c)
		b.lastCall = len(b.evs) - 1
	}
	for _, tc := range t.calls {
		if _, ok := b.calls[tc.ID]; !ok {
			b.callList = append(b.callList, tc.ID)
		}
		b.calls[tc.ID] = &callInfo{tool: tc.Name, line: line}
	}
}

// intent records that the call was dispatched at ts.
func (b *builder) intent(tc session.ToolCall, ts time.Time) {
	b.add(session.Event{Kind: session.KindToolIntent, TS: ts, CallID: tc.ID, Tool: tc.Name, Args: tc.Args})
}

// result records a tool's answer. intentTS, when set, gives latency_ms.
func (b *builder) result(line int, id, output, status, errText string, ts time.Time, latency int64, attrs map[string]any) {
	ci := b.calls[id]
	tool := ""
	if ci == nil {
		b.note(line, CodeOrphanResult, "a result for call %q, which no earlier response asked for; kept as a result without its call", id)
	} else {
		tool = ci.tool
		ci.answered = true
	}
	if status == "" {
		status = session.ResultOK
	}
	b.add(session.Event{Kind: session.KindToolResult, TS: ts, CallID: id, Tool: tool, Status: status, Output: output,
		Error: errText, LatencyMS: max(latency, 0), Attrs: marshalAttrs(attrs)})
}

// finish completes the session: header attrs, notes of calls never
// answered, the id. part names the session within its file.
func (b *builder) finish(part string) *Session {
	for _, id := range b.callList {
		if ci := b.calls[id]; !ci.answered {
			b.note(ci.line, CodeNoResult, "call %s (%s) has no result in the transcript", id, ci.tool)
		}
	}
	if len(b.notRec) > 0 {
		slices.Sort(b.notRec)
		b.attrs["not_recorded"] = b.notRec
	}
	sha, _ := b.attrs["source_sha256"].(string)
	id := sessionID(b.format, part, sha)
	h := b.hdr
	h.Kind, h.Seq, h.SessionID = session.KindSessionStarted, 1, id
	if part != "" {
		b.attrs["source_part"] = part
	}
	// An event the source gives no time (a message between timed events)
	// takes the time of the one before it, so the log's times never run
	// backwards. A source with no time at all (a Cursor transcript) is
	// dated by its file's last write, which the header says, so that a
	// batch of old transcripts does not list as run at the import; with
	// no file time either, the recorder stamps the import.
	first := h.TS
	for _, e := range b.evs {
		if first.IsZero() && !e.TS.IsZero() {
			first = e.TS
		}
	}
	if first.IsZero() {
		file, _ := b.attrs["source_file"].(string)
		if st, err := os.Stat(file); err == nil && file != "" {
			first = st.ModTime().UTC().Truncate(time.Millisecond)
			b.attrs["times"] = "the source records none: every event is dated by the file's last write"
		}
	}
	h.Attrs = marshalAttrs(b.attrs)
	if h.TS.IsZero() {
		h.TS = first
	}
	prev := h.TS
	for i := range b.evs {
		if b.evs[i].TS.IsZero() {
			b.evs[i].TS = prev
		}
		prev = b.evs[i].TS
	}
	evs := append([]session.Event{h}, b.evs...)
	for i := range evs {
		evs[i].SessionID = ""
	}
	evs[0].SessionID = id
	file, _ := b.attrs["source_file"].(string)
	rep := Report{Format: b.format, File: file, SHA256: sha, Part: part, SessionID: id, Records: b.records,
		Events: len(evs), Counts: map[string]int{}, NotRecorded: b.notRec, Notes: b.notes}
	if rep.NotRecorded == nil {
		rep.NotRecorded = []string{}
	}
	if rep.Notes == nil {
		rep.Notes = []Note{}
	}
	for _, e := range evs {
		rep.Counts[string(e.Kind)]++
	}
	return &Session{Events: evs, Report: rep}
}

// link makes child a sub-agent of parent: the child's header names the
// parent, the parent gets subagent_started and subagent_finished at the
// child's start and end, each where its time falls among the parent's
// events before afterSeq (the event that ends the sub-agent, its call's
// result; the end of the log when 0), so the log's times never run
// backwards; and the report lists it.
func link(parent, child *Session, afterSeq int64, output string) {
	child.Events[0].ParentSessionID = parent.ID()
	child.Report.ParentSessionID = parent.ID()
	start, end := child.Events[0].TS, child.Events[len(child.Events)-1].TS
	at := len(parent.Events)
	if afterSeq > 0 && int(afterSeq) <= len(parent.Events) {
		at = int(afterSeq)
	}
	if start.IsZero() || end.IsZero() {
		start, end = parent.Events[at-1].TS, parent.Events[at-1].TS
	}
	// where is the index before at that t falls at: after every event
	// not later than t (the header stays first).
	where := func(t time.Time) int {
		i := at
		for i > 1 && parent.Events[i-1].TS.After(t) {
			i--
		}
		return i
	}
	pStart, pEnd := where(start), where(end)
	placeChild(parent, child, min(pStart, pEnd), pEnd, start, end, output)
}

// linkAfter makes child a sub-agent of parent with both markers right
// after the event afterSeq (the end of the log when 0), dated as that
// event: for a source that records no time, whose events are all dated
// by their file's last write, so a child's dates say nothing of where it
// ran among the parent's events (link would move it to the parent's
// start when the child's file was written first).
func linkAfter(parent, child *Session, afterSeq int64, output string) {
	child.Events[0].ParentSessionID = parent.ID()
	child.Report.ParentSessionID = parent.ID()
	at := len(parent.Events)
	if afterSeq > 0 && int(afterSeq) <= len(parent.Events) {
		at = int(afterSeq)
	}
	ts := parent.Events[at-1].TS
	placeChild(parent, child, at, at, ts, ts, output)
}

// placeChild inserts the child's subagent_started at index pStart and
// subagent_finished at pEnd of the parent's events, and lists the child.
func placeChild(parent, child *Session, pStart, pEnd int, start, end time.Time, output string) {
	evs := slices.Clone(parent.Events)
	// The later one first, so the earlier index still holds.
	evs = insertEvent(evs, pEnd, session.Event{Kind: session.KindSubagentFinished, TS: end, ChildSessionID: child.ID(), Output: output})
	evs = insertEvent(evs, pStart, session.Event{Kind: session.KindSubagentStarted, TS: start, ChildSessionID: child.ID()})
	parent.Events = evs
	parent.Report.Events = len(evs)
	parent.Report.Counts[string(session.KindSubagentStarted)]++
	parent.Report.Counts[string(session.KindSubagentFinished)]++
	parent.Report.Notes = append(parent.Report.Notes, Note{Code: CodeSubagent, Detail: fmt.Sprintf("%s imported as child session %s", child.Report.File, child.ID())})
	parent.Children = append(parent.Children, child)
}

// insertEvent inserts e at index i of a log's events, renumbering seqs
// densely; a compaction's through moves with the events it names.
func insertEvent(evs []session.Event, i int, e session.Event) []session.Event {
	evs = slices.Insert(evs, i, e)
	for j := range evs {
		evs[j].Seq = int64(j + 1)
		if j != i && evs[j].Kind == session.KindCompaction && evs[j].Through >= int64(i+1) {
			evs[j].Through++
		}
	}
	return evs
}

// adopt makes child a sub-agent of parent whose events already hold its
// subagent_started and _finished (an agentctl export imported back): they
// named the child, when exported, as exported; now they name the child as
// imported.
func adopt(parent, child *Session, exported string) {
	child.Events[0].ParentSessionID = parent.ID()
	child.Report.ParentSessionID = parent.ID()
	for i := range parent.Events {
		if e := &parent.Events[i]; exported != "" && e.ChildSessionID == exported {
			e.ChildSessionID = child.ID()
		}
	}
	parent.Report.Notes = append(parent.Report.Notes, Note{Code: CodeSubagent, Detail: fmt.Sprintf("%s imported as child session %s", child.Report.File, child.ID())})
	parent.Children = append(parent.Children, child)
}

// All returns s and its descendants, parents first.
func All(ss []*Session) []*Session {
	var out []*Session
	var walk func(*Session)
	walk = func(s *Session) {
		out = append(out, s)
		for _, c := range s.Children {
			walk(c)
		}
	}
	for _, s := range ss {
		walk(s)
	}
	return out
}

func marshalAttrs(m map[string]any) json.RawMessage {
	if len(m) == 0 {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(m) != nil {
		return nil
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// priceModel is the model id the price table knows: without a router's
// provider prefix (openai/gpt-4o) or a cloud's region and vendor
// (converse/jp.anthropic.claude-haiku-4-5-…).
func priceModel(m string) string {
	if i := strings.LastIndex(m, "/"); i >= 0 {
		m = m[i+1:]
	}
	if i := strings.LastIndex(m, "anthropic."); i >= 0 {
		m = m[i+len("anthropic."):]
	}
	return m
}

// splitModel splits "provider/model" (Inspect's, LiteLLM's) in two; a bare
// model keeps the fallback provider.
func splitModel(m, fallback string) (string, string) {
	if p, rest, ok := strings.Cut(m, "/"); ok && p != "" && rest != "" {
		return p, rest
	}
	return fallback, m
}

// parseTime reads the timestamps the formats write: RFC 3339 with or
// without a zone (OpenHands writes none: read as UTC), or Unix seconds.
func parseTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// argsObject turns a tool call's arguments into the JSON object a
// tool_call holds: an object is kept as is, a JSON string holding an
// object is unwrapped, anything else becomes {"input": value}.
func argsObject(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{}`)
	}
	if raw[0] == '{' && json.Valid(raw) {
		return raw
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			t := strings.TrimSpace(s)
			if strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
				return json.RawMessage(t)
			}
			if t == "" {
				return json.RawMessage(`{}`)
			}
		}
	}
	if !json.Valid(raw) {
		raw, _ = json.Marshal(string(raw))
	}
	return json.RawMessage(`{"input":` + string(raw) + `}`)
}

// readSource reads a file and the name the header records for it.
func readSource(path string) ([]byte, string, error) { return readSourceMax(path, -1) }

// readSourceMax is readSource for a format read whole as one document (a
// JSON object, not records one by one): a file over limit bytes (-1: no
// limit) is refused, not read into memory.
func readSourceMax(path string, limit int64) ([]byte, string, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	var r io.Reader = f
	if limit >= 0 {
		r = io.LimitReader(f, limit+1)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, "", fmt.Errorf("import: %w", err)
	}
	if limit >= 0 && int64(len(b)) > limit {
		return nil, "", fmt.Errorf("import %s: the file is over %d MiB, more than this format's files hold; not read", path, limit>>20)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	return b, abs, nil
}

// textOf reads a content value that is a string or a list of blocks with
// text: the texts joined by newlines.
func textOf(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var parts []string
		for _, b := range blocks {
			if b.Text != "" {
				parts = append(parts, b.Text)
			}
		}
		return strings.Join(parts, "\n")
	}
	return string(raw)
}
