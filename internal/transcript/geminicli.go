package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/session"
)

// FormatGeminiCLI is Gemini CLI's chat recording: session JSONL
// (~/.gemini/tmp/<project>/chats/session-*.jsonl, sub-agents in
// chats/<session id>/<agent id>.jsonl) and the single .json of versions
// before it.
const FormatGeminiCLI = "gemini-cli"

// How Gemini CLI writes a session (packages/core/src/services/
// chatRecordingService.ts): a header line {sessionId, projectHash,
// startTime, lastUpdated, kind}, then message records {id, timestamp,
// type, content, ...}. A message is appended again, whole, each time it
// changes (its tokens arrive, its tool calls complete): the last copy
// wins and keeps the place of the first. {"$set": {...}} lines update the
// header; a $set holding messages is a checkpoint that replaces them all.
// {"$rewindTo": id} drops that message and every one after it (an unknown
// id drops them all). This importer folds the lines the way gemini-cli's
// own loader does, so the session is the conversation gemini-cli would
// resume.

// geminiMsg is one message record.
type geminiMsg struct {
	ID        string           `json:"id"`
	Timestamp string           `json:"timestamp"`
	Type      string           `json:"type"`
	Content   json.RawMessage  `json:"content"`
	ToolCalls []geminiToolCall `json:"toolCalls"`
	Thoughts  json.RawMessage  `json:"thoughts"`
	Tokens    *geminiTokens    `json:"tokens"`
	Model     string           `json:"model"`
}

type geminiToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Args      json.RawMessage `json:"args"`
	Result    json.RawMessage `json:"result"`
	Status    string          `json:"status"`
	Timestamp string          `json:"timestamp"`
	AgentID   string          `json:"agentId"`
}

// geminiTokens is the usage metadata of one response, renamed:
// input = promptTokenCount (cached included), output =
// candidatesTokenCount (thoughts excluded), tool =
// toolUsePromptTokenCount.
type geminiTokens struct {
	Input    int64 `json:"input"`
	Output   int64 `json:"output"`
	Cached   int64 `json:"cached"`
	Thoughts int64 `json:"thoughts"`
	Tool     int64 `json:"tool"`
	Total    int64 `json:"total"`
}

// geminiMeta is the header and what $set lines change in it.
type geminiMeta struct {
	SessionID   string          `json:"sessionId"`
	ProjectHash string          `json:"projectHash"`
	StartTime   string          `json:"startTime"`
	LastUpdated string          `json:"lastUpdated"`
	Summary     string          `json:"summary"`
	Kind        string          `json:"kind"`
	Directories []string        `json:"directories"`
	Messages    json.RawMessage `json:"messages"`
}

// geminiItem is a message (id) or a compaction in the folded timeline.
type geminiItem struct {
	id         string
	compaction *geminiCompaction
}

// geminiCompaction is Gemini CLI compressing the history: the messages up
// to through became summary.
type geminiCompaction struct {
	through, summary string
	ts               time.Time
}

// geminiRec is a message as the fold holds it: the record and the line
// its current copy came from.
type geminiRec struct {
	line int
	msg  geminiMsg
}

// geminiImport is one Gemini CLI session being imported.
type geminiImport struct {
	b      *builder
	meta   geminiMeta
	header bool
	order  []string
	byID   map[string]*geminiRec
	// done: what a compaction closed, in order (the messages as they
	// were, then the compaction); absorbed: the ids of the checkpoint
	// that compacted them (its summary, its copies of the turns it kept),
	// which later checkpoints repeat.
	done     []geminiItem
	absorbed map[string]bool
	// seen: the fullest copy of each message read; a checkpoint's copy
	// of a message lacks its tokens, model and tool calls, and takes them
	// from here. dropped: messages a rewind or rollback took out, noted
	// as fork unless a later checkpoint brings them back.
	seen        map[string]geminiMsg
	dropped     map[string]Note
	droppedList []string
	// answered: calls whose result the gemini message's toolCalls gave.
	answered map[string]bool
	tokens   bool
}

// importGeminiCLIFile imports a Gemini CLI session and, for a main
// session, the sub-agent sessions in the folder named by its session id
// beside it.
func importGeminiCLIFile(path string) ([]*Session, error) {
	main, meta, err := importGeminiCLI(path)
	if err != nil {
		return nil, err
	}
	if meta.Kind != "subagent" && meta.SessionID != "" {
		files, _ := filepath.Glob(filepath.Join(filepath.Dir(path), geminiSafeName(meta.SessionID), "*.jsonl"))
		sort.Strings(files)
		for _, f := range files {
			child, cmeta, err := importGeminiCLI(f)
			if err != nil {
				main.Report.Notes = append(main.Report.Notes, Note{Code: CodeNotImported, Detail: fmt.Sprintf("sub-agent file %s not imported: %v", f, err)})
				continue
			}
			linkGeminiChild(main, child, cmeta.SessionID)
		}
	}
	return []*Session{main}, nil
}

// geminiUnsafe is what gemini-cli's sanitizeFilenamePart replaces in a
// session id before it names a file or folder.
var geminiUnsafe = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

func geminiSafeName(s string) string { return geminiUnsafe.ReplaceAllString(s, "_") }

// linkGeminiChild links a sub-agent before the result of the call whose
// record names it (agentId), else at the end.
func linkGeminiChild(parent, child *Session, agentID string) {
	at, output := int64(0), lastAssistantText(child.Events)
	for _, e := range parent.Events {
		var r struct {
			Agent string `json:"agent_id"`
		}
		if e.Kind == session.KindToolResult && json.Unmarshal(e.Attrs, &r) == nil && r.Agent == agentID {
			at, output = e.Seq-1, e.Output
			break
		}
	}
	link(parent, child, at, output)
}

// importGeminiCLI imports one file: JSONL, or the older single JSON
// object with the messages inside.
func importGeminiCLI(path string) (*Session, geminiMeta, error) {
	data, file, err := readSource(path)
	if err != nil {
		return nil, geminiMeta{}, err
	}
	g := &geminiImport{b: newBuilder(FormatGeminiCLI, file, data), byID: map[string]*geminiRec{}, answered: map[string]bool{}}
	g.b.hdr.Provider = "gemini"
	if t := bytes.TrimSpace(data); bytes.HasPrefix(t, []byte("{")) && json.Valid(t) && bytes.Count(t, []byte("\n")) > 0 {
		// The .json of older versions: one object, pretty-printed.
		g.legacy(t)
	} else {
		readLines(data, g.b, g.line)
	}
	if !g.header {
		return nil, geminiMeta{}, fmt.Errorf("import gemini-cli %s: no header with sessionId and projectHash; is this a Gemini CLI session file?", path)
	}
	for i, id := range g.droppedList {
		if x, ok := g.dropped[id]; ok && !slices.Contains(g.droppedList[i+1:], id) {
			g.b.notes = append(g.b.notes, x)
		}
	}
	seqOf := map[string]int64{}
	for _, it := range append(g.done, g.items()...) {
		if c := it.compaction; c != nil {
			g.b.add(session.Event{Kind: session.KindCompaction, TS: c.ts, Through: max(seqOf[c.through], 1), Summary: c.summary})
			continue
		}
		g.message(g.byID[it.id])
		seqOf[it.id] = g.b.lastSeq()
	}
	return g.finish(), g.meta, nil
}

// legacy reads the single-object form: its messages are the records.
func (g *geminiImport) legacy(data []byte) {
	var m geminiMeta
	if err := json.Unmarshal(data, &m); err != nil || m.SessionID == "" || m.ProjectHash == "" {
		return
	}
	g.header = true
	g.meta = m
	var msgs []json.RawMessage
	_ = json.Unmarshal(m.Messages, &msgs)
	for i, raw := range msgs {
		g.b.records++
		g.put(i+1, raw)
	}
}

// line folds one JSONL record into the conversation.
func (g *geminiImport) line(n int, raw []byte) error {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return err
	}
	switch {
	// The kinds as gemini-cli's loader tells them, in its order: a
	// record of none (a $rewindTo that is no string, a $set that is no
	// object) is reported, not guessed at.
	case StringOf(probe, "$rewindTo") != "":
		g.rewind(n, StringOf(probe, "$rewindTo"))
	case isJSONObject(probe["$set"]):
		var set geminiMeta
		if err := json.Unmarshal(probe["$set"], &set); err != nil {
			return err
		}
		g.set(n, set)
	case StringOf(probe, "id") != "":
		g.put(n, raw)
	case StringOf(probe, "sessionId") != "" && StringOf(probe, "projectHash") != "":
		var m geminiMeta
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		if g.header {
			g.b.note(n, CodeSkipped, "another header (session %s); its fields update the first", m.SessionID)
		}
		g.header = true
		g.set(n, m)
	default:
		g.b.note(n, CodeUnknownRecord, "a record that is no message, header, $set or $rewindTo; skipped")
	}
	return nil
}

// put adds a message record, or replaces the earlier copy of it in its
// place.
func (g *geminiImport) put(n int, raw []byte) {
	var m geminiMsg
	if err := json.Unmarshal(raw, &m); err != nil || m.ID == "" {
		g.b.note(n, CodeBadLine, "a message record that does not decode (%v); skipped", err)
		return
	}
	m = g.enrich(m)
	if old := g.byID[m.ID]; old != nil {
		if old.line != n {
			g.b.note(old.line, CodeSkipped, "message %s is written again, whole, at line %d; that copy stands", m.ID, n)
		}
		old.line, old.msg = n, m
		return
	}
	delete(g.dropped, m.ID)
	g.byID[m.ID] = &geminiRec{line: n, msg: m}
	g.order = append(g.order, m.ID)
}

// enrich fills what a copy of a message lacks (a checkpoint's copy has no
// tokens, model or tool calls) from the fullest copy read before, and
// keeps it.
func (g *geminiImport) enrich(m geminiMsg) geminiMsg {
	if g.seen == nil {
		g.seen = map[string]geminiMsg{}
	}
	if old, ok := g.seen[m.ID]; ok && old.Type == m.Type {
		if m.Tokens == nil {
			m.Tokens = old.Tokens
		}
		if m.Model == "" {
			m.Model = old.Model
		}
		if len(m.ToolCalls) == 0 {
			m.ToolCalls = old.ToolCalls
		}
		if len(m.Thoughts) == 0 {
			m.Thoughts = old.Thoughts
		}
	}
	g.seen[m.ID] = m
	return m
}

// dropOne takes message id out of the conversation for why.
func (g *geminiImport) dropOne(id, why string) {
	if g.dropped == nil {
		g.dropped = map[string]Note{}
	}
	g.dropped[id] = Note{Line: g.byID[id].line, Code: CodeFork, Detail: "message " + id + " " + why}
	g.droppedList = append(g.droppedList, id)
	delete(g.byID, id)
}

// drop removes the messages order[i:], noting why.
func (g *geminiImport) drop(i int, why string) {
	for _, id := range g.order[i:] {
		g.dropOne(id, why)
	}
	g.order = g.order[:i]
}

func (g *geminiImport) rewind(n int, id string) {
	if i := slices.Index(g.order, id); i >= 0 {
		g.drop(i, fmt.Sprintf("was rewound by the $rewindTo at line %d", n))
		return
	}
	g.drop(0, fmt.Sprintf("was dropped by the $rewindTo at line %d, whose message is unknown (gemini-cli then drops them all)", n))
}

// set merges a header update; messages in it are a checkpoint that
// replaces the conversation.
func (g *geminiImport) set(n int, s geminiMeta) {
	m := &g.meta
	for _, f := range []struct{ dst, src *string }{{&m.SessionID, &s.SessionID}, {&m.ProjectHash, &s.ProjectHash},
		{&m.StartTime, &s.StartTime}, {&m.LastUpdated, &s.LastUpdated}, {&m.Summary, &s.Summary}, {&m.Kind, &s.Kind}} {
		if *f.src != "" {
			*f.dst = *f.src
		}
	}
	if s.Directories != nil {
		m.Directories = s.Directories
	}
	var msgs []json.RawMessage
	if len(s.Messages) == 0 || json.Unmarshal(s.Messages, &msgs) != nil {
		return
	}
	var cp []geminiMsg
	inCP := map[string]bool{}
	fresh := false // a message the conversation has not had
	for _, raw := range msgs {
		var m geminiMsg
		if json.Unmarshal(raw, &m) != nil || m.ID == "" {
			g.b.note(n, CodeBadLine, "a message of the checkpoint that does not decode; skipped")
			continue
		}
		cp = append(cp, m)
		inCP[m.ID] = true
		fresh = fresh || (g.byID[m.ID] == nil && !g.absorbed[m.ID])
	}
	var gone []string
	for _, id := range g.order {
		if !inCP[id] {
			gone = append(gone, id)
		}
	}
	switch {
	case len(gone) > 0 && fresh:
		g.compact(n, cp)
		return
	case len(gone) > 0:
		// A rollback (a failed or cancelled turn taken back): what it
		// drops is a branch the conversation left, as a rewind's.
		for _, id := range gone {
			g.dropOne(id, fmt.Sprintf("is not in the checkpoint ($set messages) at line %d, which replaces the conversation", n))
		}
	}
	g.order = nil
	for _, m := range cp {
		switch r := g.byID[m.ID]; {
		case g.absorbed[m.ID]:
		case r != nil:
			r.line, r.msg = n, g.enrich(m)
			g.order = append(g.order, m.ID)
		default:
			delete(g.dropped, m.ID)
			g.byID[m.ID] = &geminiRec{line: n, msg: g.enrich(m)}
			g.order = append(g.order, m.ID)
		}
	}
}

// compact folds a checkpoint that drops messages and brings new ones:
// Gemini CLI compressed the history into a summary turn (and its
// acknowledgement) followed by copies, under new ids, of the turns it
// kept. The messages before stay as they were (they were sent and
// billed); a compaction follows them whose summary is the checkpoint's
// text before the kept copies, through the last message it replaced.
func (g *geminiImport) compact(n int, cp []geminiMsg) {
	// The kept turns are the conversation's tail, copied: match from the
	// end.
	i, j := len(cp)-1, len(g.order)-1
	for i >= 0 && j >= 0 && geminiSameTurn(cp[i], g.byID[g.order[j]].msg) {
		i, j = i-1, j-1
	}
	c := &geminiCompaction{}
	if j >= 0 {
		c.through = g.order[j]
	}
	var parts []string
	for _, m := range cp[:i+1] {
		if t := geminiText(m.Content, nil); t != "" {
			parts = append(parts, t)
		}
		if ts, ok := parseTime(m.Timestamp); ok && ts.After(c.ts) {
			c.ts = ts
		}
	}
	c.summary = strings.Join(parts, "\n\n")
	// The compaction comes when it happened: after every message so far.
	g.done = append(g.done, g.items()...)
	g.done = append(g.done, geminiItem{compaction: c})
	g.order = nil
	if g.absorbed == nil {
		g.absorbed = map[string]bool{}
	}
	for _, m := range cp {
		g.absorbed[m.ID] = true
	}
	g.b.note(0, CodeKeptInAttrs, "the checkpoint at line %d compresses the history: a compaction through message %s, the %d turns it kept already imported", n, c.through, len(cp)-1-i)
}

// items is the current conversation as timeline items.
func (g *geminiImport) items() []geminiItem {
	var out []geminiItem
	for _, id := range g.order {
		out = append(out, geminiItem{id: id})
	}
	return out
}

// geminiSameTurn reports whether a checkpoint's message is a copy of
// orig: the same kind and content, or a model turn whose function calls
// are orig's recorded tool calls (a copy holds the calls as content
// parts, the original in toolCalls).
func geminiSameTurn(cp, orig geminiMsg) bool {
	if cp.Type != orig.Type {
		return false
	}
	if cp.ID == orig.ID || bytes.Equal(compactJSON(cp.Content), compactJSON(orig.Content)) {
		return true
	}
	if geminiText(cp.Content, nil) != geminiText(orig.Content, nil) {
		return false
	}
	ids := map[string]bool{}
	for _, tc := range orig.ToolCalls {
		ids[tc.ID] = true
	}
	calls := 0
	for _, p := range geminiPartList(cp.Content) {
		var x struct {
			FunctionCall *struct {
				ID string `json:"id"`
			} `json:"functionCall"`
		}
		if json.Unmarshal(p, &x) == nil && x.FunctionCall != nil {
			if !ids[x.FunctionCall.ID] {
				return false
			}
			calls++
		}
	}
	return calls > 0
}

func compactJSON(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// geminiModelMessage is the type of gemini-cli's record of a model turn
// (its own word, not the name of the model API).
const geminiModelMessage = "gemini"

// message maps one message of the folded conversation to events.
func (g *geminiImport) message(r *geminiRec) {
	b, m := g.b, r.msg
	ts, _ := parseTime(m.Timestamp)
	switch m.Type {
	case "user":
		g.user(r, ts)
	case geminiModelMessage:
		g.gemini(r, ts)
	case "error":
		b.add(session.Event{Kind: session.KindError, TS: ts, Reason: "source_error", Error: geminiText(m.Content, nil)})
	case "info", "warning":
		b.note(r.line, CodeSkipped, "%s message shown to the user, not sent to the model: %s", m.Type, geminiText(m.Content, nil))
	default:
		b.note(r.line, CodeUnknownRecord, "message type %q is not one this importer knows; skipped", m.Type)
	}
}

// user adds a prompt, or the results a user turn carries back to the
// model (functionResponse parts) that the calls' records did not give.
func (g *geminiImport) user(r *geminiRec, ts time.Time) {
	parts := geminiPartList(r.msg.Content)
	var results []json.RawMessage
	for _, p := range parts {
		if bytes.Contains(p, []byte(`"functionResponse"`)) {
			results = append(results, p)
		}
	}
	if len(results) > 0 && len(results) == len(parts) {
		for _, p := range results {
			var x struct {
				FunctionResponse struct {
					ID       string          `json:"id"`
					Response json.RawMessage `json:"response"`
				} `json:"functionResponse"`
			}
			_ = json.Unmarshal(p, &x)
			if g.answered[x.FunctionResponse.ID] {
				g.b.note(r.line, CodeSkipped, "the result of call %s sent back to the model; the call's record gave it", x.FunctionResponse.ID)
				continue
			}
			out, errText := geminiResponse(x.FunctionResponse.Response)
			status := session.ResultOK
			if errText != "" {
				status = session.ResultError
			}
			g.answered[x.FunctionResponse.ID] = true
			g.b.result(r.line, x.FunctionResponse.ID, out, status, errText, ts, g.b.latency(x.FunctionResponse.ID, ts), nil)
		}
		return
	}
	attrs := map[string]any{}
	text := geminiText(r.msg.Content, attrs)
	g.b.add(session.Event{Kind: session.KindUserMessage, TS: ts, Text: text, Attrs: marshalAttrs(attrs)})
}

// gemini adds one response: its text, thoughts and usage, then an intent
// per tool call and the result its record holds.
func (g *geminiImport) gemini(r *geminiRec, ts time.Time) {
	m := r.msg
	t := turn{ts: ts, provider: "gemini", model: m.Model, attrs: map[string]any{}, callAttrs: map[string]any{}}
	t.text = geminiText(m.Content, t.attrs)
	if th := bytes.TrimSpace(m.Thoughts); len(th) > 0 && string(th) != "[]" && string(th) != "null" {
		t.attrs["thoughts"] = th
	}
	if m.Model == "" {
		t.model = g.b.hdr.Model
	} else if g.b.hdr.Model == "" {
		g.b.hdr.Model = m.Model
	}
	if k := m.Tokens; k != nil {
		g.tokens = true
		// Gemini bills thoughts as output, and its prompt count already
		// holds the cached tokens.
		t.usage = &pricing.Usage{Input: k.Input + k.Tool, CacheRead: k.Cached, Output: k.Output + k.Thoughts}
		if k.Thoughts > 0 {
			t.callAttrs["reasoning_tokens"] = k.Thoughts
		}
	}
	for _, tc := range m.ToolCalls {
		t.calls = append(t.calls, session.ToolCall{ID: tc.ID, Name: tc.Name, Args: argsObject(tc.Args)})
	}
	g.b.addTurn(t, r.line)
	for _, tc := range t.calls {
		g.b.intent(tc, ts)
	}
	for _, tc := range m.ToolCalls {
		res := bytes.TrimSpace(tc.Result)
		if len(res) == 0 || string(res) == "null" {
			continue
		}
		rts, ok := parseTime(tc.Timestamp)
		if !ok {
			rts = ts
		}
		out, errText := geminiResult(res)
		status := session.ResultOK
		switch tc.Status {
		case "error":
			status = session.ResultError
		case "cancelled":
			status = session.ResultCancelled
		}
		if status == session.ResultOK && errText != "" {
			status = session.ResultError
		}
		attrs := map[string]any{}
		if tc.AgentID != "" {
			attrs["agent_id"] = tc.AgentID
		}
		if tc.Status != "" && tc.Status != "success" {
			attrs["source_status"] = tc.Status
		}
		g.answered[tc.ID] = true
		g.b.result(r.line, tc.ID, out, status, errText, rts, g.b.latency(tc.ID, rts), attrs)
	}
}

// finish completes the header.
func (g *geminiImport) finish() *Session {
	b, m := g.b, g.meta
	b.attrs["source_session_id"] = m.SessionID
	b.attrs["source_project_hash"] = m.ProjectHash
	if m.Kind != "" {
		b.attrs["source_kind"] = m.Kind
	}
	if m.Summary != "" {
		b.attrs["source_summary"] = m.Summary
	}
	if len(m.Directories) > 0 {
		b.attrs["source_cwd"] = m.Directories[0]
		if len(m.Directories) > 1 {
			b.attrs["source_directories"] = m.Directories
		}
	}
	if ts, ok := parseTime(m.StartTime); ok {
		b.hdr.TS = ts
	}
	b.hdr.Name = "gemini-cli " + m.SessionID
	if !g.tokens {
		b.notRecorded(session.NotRecordedUsage)
	}
	if len(m.Directories) == 0 {
		b.notRecorded("the folder it ran in (only its hash, projectHash)")
	}
	b.notRecorded("system prompt", "tool definitions", "finish reasons", "end state",
		"when a tool call started (its intent takes the response's time)")
	return b.finish("")
}

func isJSONObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// geminiPartList reads content (a PartListUnion: a string, a part, or a
// list of parts) as a list of parts.
func geminiPartList(raw json.RawMessage) []json.RawMessage {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil
	case raw[0] == '[':
		var parts []json.RawMessage
		_ = json.Unmarshal(raw, &parts)
		return parts
	}
	return []json.RawMessage{raw}
}

// geminiText joins the text of content's parts; parts that are not text
// (inline data, files, calls) go into attrs["parts"] when attrs is given.
func geminiText(raw json.RawMessage, attrs map[string]any) string {
	var texts []string
	for _, p := range geminiPartList(raw) {
		if p[0] == '"' {
			var s string
			_ = json.Unmarshal(p, &s)
			texts = append(texts, s)
			continue
		}
		var x struct {
			Text    *string `json:"text"`
			Thought bool    `json:"thought"`
		}
		if json.Unmarshal(p, &x) == nil && x.Text != nil && !x.Thought {
			texts = append(texts, *x.Text)
			continue
		}
		if attrs != nil {
			keepVerbatim(attrs, "parts", p)
		}
	}
	return strings.Join(texts, "")
}

// geminiResult reads a tool call's result parts: the functionResponse's
// output or error, and any text beside it.
func geminiResult(raw json.RawMessage) (out, errText string) {
	var outs, errs []string
	for _, p := range geminiPartList(raw) {
		var x struct {
			Text             *string `json:"text"`
			FunctionResponse *struct {
				Response json.RawMessage `json:"response"`
			} `json:"functionResponse"`
		}
		switch {
		case p[0] == '"':
			var s string
			_ = json.Unmarshal(p, &s)
			outs = append(outs, s)
		case json.Unmarshal(p, &x) != nil:
			outs = append(outs, string(p))
		case x.FunctionResponse != nil:
			o, e := geminiResponse(x.FunctionResponse.Response)
			if o != "" {
				outs = append(outs, o)
			}
			if e != "" {
				errs = append(errs, e)
			}
		case x.Text != nil:
			outs = append(outs, *x.Text)
		default:
			outs = append(outs, string(p))
		}
	}
	return strings.Join(outs, "\n"), strings.Join(errs, "\n")
}

// geminiResponse reads a functionResponse's response: {"output": …} or
// {"error": …} as gemini-cli writes them, anything else as its JSON.
func geminiResponse(raw json.RawMessage) (out, errText string) {
	var r map[string]json.RawMessage
	if json.Unmarshal(raw, &r) != nil {
		return string(raw), ""
	}
	str := func(k string) (string, bool) {
		var s string
		v, ok := r[k]
		return s, ok && json.Unmarshal(v, &s) == nil
	}
	if e, ok := str("error"); ok {
		o, _ := str("output")
		if o == "" {
			o = e
		}
		return o, e
	}
	if o, ok := str("output"); ok && len(r) == 1 {
		return o, ""
	}
	return string(raw), ""
}

func init() {
	Register(Format{
		Name: FormatGeminiCLI,
		Doc: "Gemini CLI session JSONL (~/.gemini/tmp/<project>/chats/session-*.jsonl), its sub-agents\n" +
			"in chats/<session id>/ as child sessions; the single .json of versions before 0.39",
		Exts:      []string{".jsonl", ".json"},
		Detect:    detectGeminiCLI,
		Import:    importGeminiCLIFile,
		Companion: geminiCompanion,
	})
}

// detectGeminiCLI claims a file whose first record (the JSONL header, or
// the older single object) holds string sessionId and projectHash: no
// other tool writes that pair (Claude Code's lines have a sessionId and no
// projectHash).
func detectGeminiCLI(h *Head) bool {
	_, vals, ok := h.TopKeys()
	return ok && StringOf(vals, "sessionId") != "" && StringOf(vals, "projectHash") != ""
}

// geminiCompanion: Gemini CLI names a main session session-*.json(l) and
// a sub-agent's file by the sub-agent's id, in the folder named by its
// session's id; the session's import brings it in.
func geminiCompanion(path string) string {
	name := filepath.Base(path)
	if ext := filepath.Ext(name); (ext == ".jsonl" || ext == ".json") && !strings.HasPrefix(name, "session-") {
		return "a Gemini CLI sub-agent file"
	}
	return ""
}
