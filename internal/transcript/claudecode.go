package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/session"
)

// ccLine is the part of a Claude Code transcript line the importer reads
// (corpus FORMATS.md section 2.1).
type ccLine struct {
	Type              string          `json:"type"`
	Subtype           string          `json:"subtype"`
	UUID              string          `json:"uuid"`
	ParentUUID        *string         `json:"parentUuid"`
	LogicalParentUUID string          `json:"logicalParentUuid"`
	SessionID         string          `json:"sessionId"`
	AgentID           string          `json:"agentId"`
	Cwd               string          `json:"cwd"`
	Version           string          `json:"version"`
	GitBranch         string          `json:"gitBranch"`
	Timestamp         string          `json:"timestamp"`
	IsSidechain       bool            `json:"isSidechain"`
	IsMeta            bool            `json:"isMeta"`
	IsCompactSummary  bool            `json:"isCompactSummary"`
	RequestID         string          `json:"requestId"`
	Operation         string          `json:"operation"`
	Content           json.RawMessage `json:"content"`
	Attachment        json.RawMessage `json:"attachment"`
	ToolUseResult     json.RawMessage `json:"toolUseResult"`
	Message           *struct {
		ID         string          `json:"id"`
		Role       string          `json:"role"`
		Model      string          `json:"model"`
		Content    json.RawMessage `json:"content"`
		StopReason string          `json:"stop_reason"`
		Usage      *ccUsage        `json:"usage"`
	} `json:"message"`
}

type ccUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreation            struct {
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

// bill is Anthropic usage as the live provider counts it: billed input
// holds the cache reads and writes.
func (u *ccUsage) bill() *pricing.Usage {
	if u == nil {
		return nil
	}
	return &pricing.Usage{Input: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
		CacheRead: u.CacheReadInputTokens, CacheCreation: u.CacheCreationInputTokens,
		CacheCreation1h: u.CacheCreation.Ephemeral1h, Output: u.OutputTokens}
}

type ccBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   *bool           `json:"is_error"`
}

// readLines splits JSONL into records: a last line that is not JSON is
// torn (the sound prefix is kept), another bad line is reported and
// skipped. Blank lines are skipped.
func readLines(data []byte, b *builder, decode func(n int, raw []byte) error) {
	n := 0
	for len(data) > 0 {
		n++
		i := bytes.IndexByte(data, '\n')
		var raw []byte
		last := i < 0
		if last {
			raw, data = data, nil
		} else {
			raw, data = data[:i], data[i+1:]
			last = len(bytes.TrimSpace(data)) == 0
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		b.records++
		if err := decode(n, raw); err != nil {
			if last {
				b.note(n, CodeTornLine, "the last line (%d bytes) is cut short or not JSON (%v); the %d lines before it are imported", len(raw), err, n-1)
			} else {
				b.note(n, CodeBadLine, "not a JSON record (%v); skipped", err)
			}
		}
	}
}

// importClaudeCodeFile imports a Claude Code session file and the
// sub-agent files beside it.
func importClaudeCodeFile(path string) ([]*Session, error) {
	main, sid, err := importClaudeCode(path)
	if err != nil {
		return nil, err
	}
	if main.Report.ParentSessionID == "" && sid != "" && !isSidechainFile(main) {
		dir := filepath.Dir(path)
		var files []string
		m1, _ := filepath.Glob(filepath.Join(dir, "agent-*.jsonl"))
		m2, _ := filepath.Glob(filepath.Join(dir, sid, "subagents", "*.jsonl"))
		files = append(m1, m2...)
		sort.Strings(files)
		for _, f := range files {
			if same, _ := filepath.Abs(f); same == main.Report.File {
				continue
			}
			child, csid, err := importClaudeCode(f)
			if err != nil {
				main.Report.Notes = append(main.Report.Notes, Note{Code: CodeNotImported, Detail: fmt.Sprintf("sub-agent file %s beside the session not imported: %v", f, err)})
				continue
			}
			if csid != sid || !isSidechainFile(child) {
				continue // another session's sub-agent, or not one
			}
			linkClaudeChild(main, child)
		}
	}
	return []*Session{main}, nil
}

func isSidechainFile(s *Session) bool {
	var a struct {
		Agent string `json:"agent_id"`
	}
	_ = json.Unmarshal(s.Events[0].Attrs, &a)
	return a.Agent != ""
}

// linkClaudeChild links a sub-agent to its parent: before the result of
// the Task call whose toolUseResult names its agentId, else where its
// first line falls in time (a warm-up sub-agent no call started).
func linkClaudeChild(parent, child *Session) {
	var a struct {
		Agent string `json:"agent_id"`
	}
	_ = json.Unmarshal(child.Events[0].Attrs, &a)
	at := int64(0)
	output := ""
	for _, e := range parent.Events {
		if e.Kind != session.KindToolResult || len(e.Attrs) == 0 {
			continue
		}
		var r struct {
			Agent string `json:"agent_id"`
		}
		if json.Unmarshal(e.Attrs, &r) == nil && r.Agent == a.Agent {
			at, output = e.Seq-1, e.Output
			break
		}
	}
	if at == 0 {
		start := child.Events[0].TS
		at = int64(len(parent.Events))
		for _, e := range parent.Events[1:] {
			if !e.TS.IsZero() && e.TS.After(start) {
				at = e.Seq - 1
				break
			}
		}
		output = lastAssistantText(child.Events)
	}
	link(parent, child, at, output)
}

func lastAssistantText(evs []session.Event) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == session.KindAssistantMessage && evs[i].Text != "" {
			return evs[i].Text
		}
	}
	return ""
}

// importClaudeCode imports one Claude Code JSONL file; sid is the
// transcript's sessionId.
func importClaudeCode(path string) (*Session, string, error) {
	data, file, err := readSource(path)
	if err != nil {
		return nil, "", err
	}
	b := newBuilder(FormatClaudeCode, file, data)
	b.hdr.Provider = "anthropic"
	b.notRecorded("system prompt", "tool definitions")
	var recs []ccRec
	readLines(data, b, func(n int, raw []byte) error {
		var l ccLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return err
		}
		recs = append(recs, ccRec{n, l})
		return nil
	})

	// The conversation is the chain of parentUuid links that leads to the
	// last message; lines off it are a branch the user rewound from.
	byUUID := map[string]int{}
	leaf := -1
	sidechain := len(recs) > 0
	for i, r := range recs {
		if r.l.UUID != "" {
			byUUID[r.l.UUID] = i
		}
		if r.l.UUID != "" && (r.l.Type == "user" || r.l.Type == "assistant") {
			leaf = i
			sidechain = sidechain && r.l.IsSidechain
		}
	}
	onChain := map[int]bool{}
	for i := leaf; i >= 0 && !onChain[i]; {
		onChain[i] = true
		l := recs[i].l
		next := ""
		if l.ParentUUID != nil {
			next = *l.ParentUUID
		} else {
			next = l.LogicalParentUUID
		}
		j, ok := byUUID[next]
		if !ok {
			break
		}
		i = j
	}
	resultsOfChain(recs, onChain)
	var branch []int
	flushBranch := func() {
		if len(branch) > 0 {
			lines := make([]string, len(branch))
			for i, n := range branch {
				lines[i] = fmt.Sprint(n)
			}
			b.note(branch[0], CodeFork, "lines %s are a branch the conversation left (a rewind: their parentUuid chain does not lead to the last message); not imported", strings.Join(lines, ", "))
			branch = nil
		}
	}

	var srcID, agentID, version, lastStop string
	// The response being gathered (one message.id), and the intents and
	// results seen since it began, in file order.
	var cur *turn
	curID, curLine := "", 0
	type op struct {
		intent *session.ToolCall
		ts     time.Time
		line   int
		res    *ccBlock
		attrs  map[string]any
	}
	var ops []op
	var lastUser int64 // seq of the latest user_message
	flush := func() {
		if cur != nil {
			lastStop = cur.finish
			b.addTurn(*cur, curLine)
			cur, curID = nil, ""
		}
		for _, o := range ops {
			if o.intent != nil {
				b.intent(*o.intent, o.ts)
				continue
			}
			status := session.ResultOK
			if o.res.IsError != nil && *o.res.IsError {
				status = session.ResultError
			}
			var lat int64
			for i := len(b.evs) - 1; i >= 0; i-- {
				if e := b.evs[i]; e.Kind == session.KindToolIntent && e.CallID == o.res.ToolUseID {
					if !e.TS.IsZero() && !o.ts.IsZero() {
						lat = o.ts.Sub(e.TS).Milliseconds()
					}
					break
				}
			}
			b.result(o.line, o.res.ToolUseID, resultContent(o.res.Content), status, "", o.ts, lat, o.attrs)
		}
		ops = nil
	}
	for i, r := range recs {
		l, n := r.l, r.n
		ts, _ := parseTime(l.Timestamp)
		if l.UUID != "" && (l.Type == "user" || l.Type == "assistant") && !onChain[i] {
			branch = append(branch, n)
			continue
		}
		flushBranch()
		if srcID == "" && l.SessionID != "" {
			srcID, version = l.SessionID, l.Version
			if l.Cwd != "" {
				b.attrs["source_cwd"] = l.Cwd
			}
			if l.GitBranch != "" {
				b.attrs["git_branch"] = l.GitBranch
			}
		}
		if agentID == "" && l.AgentID != "" && l.IsSidechain {
			agentID = l.AgentID
		}
		switch l.Type {
		case "assistant":
			m := l.Message
			if m == nil {
				b.note(n, CodeBadLine, "an assistant line without a message; skipped")
				continue
			}
			if b.hdr.Model == "" {
				b.hdr.Model = m.Model
			}
			if cur == nil || m.ID != curID || m.ID == "" {
				flush()
				cur = &turn{ts: ts, provider: "anthropic", model: m.Model, responseID: m.ID, attrs: map[string]any{}}
				if l.RequestID != "" {
					cur.callAttrs = map[string]any{"request_id": l.RequestID}
				}
				curID, curLine = m.ID, n
			}
			// Each line of a streamed response repeats its usage as far as
			// it got: the last line holds the final counts.
			if m.Usage != nil {
				cur.usage = m.Usage.bill()
			}
			if m.StopReason != "" {
				cur.finish = m.StopReason
			}
			for _, x := range rawBlocks(m.Content) {
				var bl ccBlock
				_ = json.Unmarshal(x, &bl)
				switch bl.Type {
				case "text":
					if cur.text != "" {
						cur.text += "\n"
					}
					cur.text += bl.Text
				case "tool_use", "server_tool_use":
					tc := session.ToolCall{ID: bl.ID, Name: bl.Name, Args: argsObject(bl.Input)}
					cur.calls = append(cur.calls, tc)
					ops = append(ops, op{intent: &tc, ts: ts, line: n})
				default: // thinking, redacted_thinking, images…: verbatim
					list, _ := cur.attrs[bl.Type].([]json.RawMessage)
					cur.attrs[bl.Type] = append(list, x)
				}
			}
		case "user":
			m := l.Message
			if m == nil {
				b.note(n, CodeBadLine, "a user line without a message; skipped")
				continue
			}
			var blocks []ccBlock
			text := ""
			if len(m.Content) > 0 && m.Content[0] == '"' {
				_ = json.Unmarshal(m.Content, &text)
			} else {
				_ = json.Unmarshal(m.Content, &blocks)
			}
			// Results of the open response's calls belong to it (2.1.x
			// streams each call's result before the next call's line).
			onlyResults := text == "" && len(blocks) > 0
			for _, bl := range blocks {
				onlyResults = onlyResults && bl.Type == "tool_result"
			}
			if onlyResults {
				for j := range blocks {
					bl := blocks[j]
					attrs := map[string]any{}
					var tur struct {
						AgentID string `json:"agentId"`
						Status  string `json:"status"`
					}
					if len(l.ToolUseResult) > 0 && json.Unmarshal(l.ToolUseResult, &tur) == nil && tur.AgentID != "" {
						attrs["agent_id"] = tur.AgentID
					}
					for _, x := range rawBlocks(bl.Content) {
						var t struct {
							Type string `json:"type"`
						}
						if json.Unmarshal(x, &t) == nil && t.Type != "text" {
							list, _ := attrs[t.Type].([]json.RawMessage)
							attrs[t.Type] = append(list, x)
						}
					}
					ops = append(ops, op{res: &bl, ts: ts, line: n, attrs: attrs})
				}
				continue
			}
			flush()
			if l.IsMeta {
				b.note(n, CodeSkipped, "meta user line (%s); not part of the conversation", clip(text+blockText(blocks), 60))
				continue
			}
			if l.IsCompactSummary {
				b.add(session.Event{Kind: session.KindCompaction, TS: ts, Through: b.lastSeq(), Summary: text + blockText(blocks)})
				continue
			}
			var parts []string
			attrs := map[string]any{}
			if text != "" {
				parts = append(parts, text)
			}
			for _, x := range rawBlocks(m.Content) {
				var bl ccBlock
				_ = json.Unmarshal(x, &bl)
				switch bl.Type {
				case "text":
					parts = append(parts, bl.Text)
				case "tool_result":
					// A result mixed with a prompt (rare): a result still.
					b.result(n, bl.ToolUseID, resultContent(bl.Content), okOrError(bl.IsError), "", ts, 0, nil)
				default:
					list, _ := attrs[bl.Type].([]json.RawMessage)
					attrs[bl.Type] = append(list, x)
				}
			}
			if len(parts) > 0 || len(attrs) > 0 {
				lastUser = b.add(session.Event{Kind: session.KindUserMessage, TS: ts, Text: strings.Join(parts, "\n"), Attrs: marshalAttrs(attrs)})
			}
		case "attachment":
			flush()
			if lastUser > 0 {
				e := &b.evs[lastUser-2]
				attrs := map[string]any{}
				_ = json.Unmarshal(e.Attrs, &attrs)
				list, _ := attrs["attachments"].([]any)
				attrs["attachments"] = append(list, l.Attachment)
				e.Attrs = marshalAttrs(attrs)
				b.note(n, CodeKeptInAttrs, "attachment (%s) kept in the attrs of the user message at seq %d", attachmentType(l.Attachment), lastUser)
			} else {
				b.note(n, CodeSkipped, "attachment (%s) before any user message", attachmentType(l.Attachment))
			}
		case "system":
			switch l.Subtype {
			case "compact_boundary":
				b.note(n, CodeSkipped, "compact boundary; the compaction is the summary line that follows")
			default:
				b.note(n, CodeSkipped, "system line (%s); not part of the conversation", l.Subtype)
			}
		case "queue-operation":
			var c string
			_ = json.Unmarshal(l.Content, &c)
			if c != "" {
				b.note(n, CodeSkipped, "queued prompt (%s) %q; the user line that delivers it, if any, is imported", l.Operation, clip(c, 60))
			} else {
				b.note(n, CodeSkipped, "queue operation %s", l.Operation)
			}
		case "summary", "file-history-snapshot", "last-prompt", "custom-title", "progress":
			b.note(n, CodeSkipped, "%s line; not part of the conversation", l.Type)
		default:
			b.note(n, CodeUnknownRecord, "line type %q is not one this importer knows; skipped", l.Type)
		}
	}
	flushBranch()
	flush()
	if srcID == "" && len(b.evs) == 0 {
		return nil, "", fmt.Errorf("import claude-code %s: no user or assistant lines; is this a Claude Code session transcript?", path)
	}
	b.hdr.Name = "claude-code " + srcID
	b.attrs["source_session_id"] = srcID
	if version != "" {
		b.attrs["source_version"] = version
	}
	if lastStop != "" {
		b.attrs["source_status"] = lastStop // the last response's stop reason
	} else {
		b.notRecorded("end state")
	}
	if sidechain && agentID != "" {
		b.attrs["agent_id"] = agentID
		b.hdr.Name = "claude-code " + srcID + " agent " + agentID
	}
	s := b.finish("")
	return s, srcID, nil
}

// ccRec is one line of a Claude Code transcript: its number and record.
type ccRec struct {
	n int
	l ccLine
}

// resultsOfChain adds to onChain the result lines that answer its calls
// from beside it. Claude Code 2.1.x writes each of a response's parallel
// calls as its own assistant line and hangs each result off its own
// call's line (parentUuid, sourceToolAssistantUUID), so the chain to the
// last message passes through only the last call's result; the others sit
// on side branches that no rewind made. A line is taken when it holds only
// tool results, its parent is on the chain, and each result answers a
// call the chain makes and does not answer itself. A rewound branch stays
// a fork: its results answer calls on that branch, not on the chain.
func resultsOfChain(recs []ccRec, onChain map[int]bool) {
	byUUID := map[string]int{}
	for i, r := range recs {
		if r.l.UUID != "" {
			byUUID[r.l.UUID] = i
		}
	}
	called, answered := map[string]bool{}, map[string]bool{}
	results := func(l ccLine) ([]string, bool) {
		if l.Type != "user" || l.Message == nil {
			return nil, false
		}
		var blocks []ccBlock
		if json.Unmarshal(l.Message.Content, &blocks) != nil || len(blocks) == 0 {
			return nil, false
		}
		ids := make([]string, 0, len(blocks))
		for _, bl := range blocks {
			if bl.Type != "tool_result" || bl.ToolUseID == "" {
				return nil, false
			}
			ids = append(ids, bl.ToolUseID)
		}
		return ids, true
	}
	for i, r := range recs {
		if !onChain[i] {
			continue
		}
		if r.l.Type == "assistant" && r.l.Message != nil {
			for _, x := range rawBlocks(r.l.Message.Content) {
				var bl ccBlock
				if json.Unmarshal(x, &bl) == nil && (bl.Type == "tool_use" || bl.Type == "server_tool_use") {
					called[bl.ID] = true
				}
			}
		}
		if ids, ok := results(r.l); ok {
			for _, id := range ids {
				answered[id] = true
			}
		}
	}
	for i, r := range recs {
		if onChain[i] || r.l.UUID == "" || r.l.ParentUUID == nil {
			continue
		}
		if p, ok := byUUID[*r.l.ParentUUID]; !ok || !onChain[p] {
			continue
		}
		ids, ok := results(r.l)
		for _, id := range ids {
			ok = ok && called[id] && !answered[id]
		}
		if !ok {
			continue
		}
		onChain[i] = true
		for _, id := range ids {
			answered[id] = true
		}
	}
}

func okOrError(isErr *bool) string {
	if isErr != nil && *isErr {
		return session.ResultError
	}
	return session.ResultOK
}

func attachmentType(raw json.RawMessage) string {
	var a struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &a)
	return a.Type
}

// rawBlocks splits a content array into its blocks, verbatim.
func rawBlocks(raw json.RawMessage) []json.RawMessage {
	var out []json.RawMessage
	if len(raw) > 0 && raw[0] == '[' {
		_ = json.Unmarshal(raw, &out)
	}
	return out
}

func blockText(bs []ccBlock) string {
	var parts []string
	for _, b := range bs {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// resultContent reads a tool_result's content: a string, or text blocks.
func resultContent(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var bs []ccBlock
	if json.Unmarshal(raw, &bs) == nil {
		return blockText(bs)
	}
	return string(raw)
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
