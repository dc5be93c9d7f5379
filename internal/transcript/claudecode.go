package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/clip"
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
	// api-request-shape (2.1.3xx): the request's system blocks and tool
	// definitions, named by their hash.
	Shape     json.RawMessage `json:"shape"`
	ShapeHash string          `json:"shapeHash"`
	// cost-state (2.1.3xx): Claude Code's own running cost.
	TotalCostUSD *float64        `json:"totalCostUSD"`
	ModelUsage   json.RawMessage `json:"modelUsage"`
	Message      *struct {
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
	c := &ccImport{b: newBuilder(FormatClaudeCode, file, data)}
	c.b.hdr.Provider = "anthropic"
	c.decode(data)
	c.chain()
	for i := range c.recs {
		c.line(i)
	}
	c.flushBranch()
	c.resp.flush(c.b)
	return c.finish(path)
}

// ccImport is one Claude Code file being imported: its lines, the chain of
// them that is the conversation, and the response being gathered.
type ccImport struct {
	b       *builder
	recs    []ccRec
	onChain map[int]bool
	// sidechain: every user and assistant line is a sub-agent's.
	sidechain bool
	// branch holds the lines of a left branch met since the last line on
	// the chain, noted as one fork.
	branch                  []int
	resp                    response
	srcID, agentID, version string
	// shapeHash names the api-request-shape the header took its system
	// prompt and tool definitions from ("": none seen).
	shapeHash string
	lastUser  int64 // seq of the latest user_message
}

// decode reads the lines.
func (c *ccImport) decode(data []byte) {
	readLines(data, c.b, func(n int, raw []byte) error {
		var l ccLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return err
		}
		c.recs = append(c.recs, ccRec{n, l})
		return nil
	})
}

// chain finds the conversation: the chain of parentUuid links that leads
// to the last message, with the results that answer its calls from beside
// it; lines off it are a branch the user rewound from.
func (c *ccImport) chain() {
	byUUID := map[string]int{}
	leaf := -1
	c.sidechain = len(c.recs) > 0
	for i, r := range c.recs {
		if r.l.UUID != "" {
			byUUID[r.l.UUID] = i
		}
		if r.l.UUID != "" && (r.l.Type == "user" || r.l.Type == "assistant") {
			leaf = i
			c.sidechain = c.sidechain && r.l.IsSidechain
		}
	}
	c.onChain = map[int]bool{}
	for i := leaf; i >= 0 && !c.onChain[i]; {
		c.onChain[i] = true
		l := c.recs[i].l
		next := l.LogicalParentUUID
		if l.ParentUUID != nil {
			next = *l.ParentUUID
		}
		j, ok := byUUID[next]
		if !ok {
			break
		}
		i = j
	}
	linesOfChainMessages(c.recs, c.onChain)
	resultsOfChain(c.recs, c.onChain)
}

// linesOfChainMessages adds to onChain the assistant lines of messages the
// chain holds that hang beside it. Claude Code 2.1.x runs a call while the
// rest of its message streams and writes the call's progress lines into
// the chain, so a later tool_use line of the message can hang off a
// progress line the chain to the last message does not pass. A line whose
// message.id is on the chain is part of that message, not a rewind (a
// rewind asks the model again: a new message). Only lines that make calls
// the chain does not make are taken; one that repeats them is a copy.
func linesOfChainMessages(recs []ccRec, onChain map[int]bool) {
	msgs := map[string]bool{}
	for i, r := range recs {
		if onChain[i] && r.l.Type == "assistant" && r.l.Message != nil && r.l.Message.ID != "" {
			msgs[r.l.Message.ID] = true
		}
	}
	if len(msgs) == 0 {
		return
	}
	called, _ := callsOfChain(recs, onChain)
	for i, r := range recs {
		if onChain[i] || r.l.UUID == "" || r.l.Type != "assistant" || r.l.Message == nil || !msgs[r.l.Message.ID] {
			continue
		}
		ids := ccCallIDs(r.l)
		copied := len(ids) == 0
		for _, id := range ids {
			copied = copied || called[id]
		}
		if copied {
			continue
		}
		onChain[i] = true
		for _, id := range ids {
			called[id] = true
		}
	}
}

// flushBranch notes the branch lines gathered so far as one fork.
func (c *ccImport) flushBranch() {
	if len(c.branch) == 0 {
		return
	}
	lines := make([]string, len(c.branch))
	for i, n := range c.branch {
		lines[i] = fmt.Sprint(n)
	}
	c.b.note(c.branch[0], CodeFork, "lines %s are a branch the conversation left (a rewind: their parentUuid chain does not lead to the last message); not imported", strings.Join(lines, ", "))
	c.branch = nil
}

// line imports line i of the file.
func (c *ccImport) line(i int) {
	l, n := c.recs[i].l, c.recs[i].n
	ts, _ := parseTime(l.Timestamp)
	if l.UUID != "" && (l.Type == "user" || l.Type == "assistant") && !c.onChain[i] {
		c.branch = append(c.branch, n)
		return
	}
	c.flushBranch()
	c.source(l)
	switch l.Type {
	case "assistant":
		c.assistant(l, n, ts)
	case "user":
		c.user(l, n, ts)
	case "attachment":
		c.resp.flush(c.b)
		c.attachment(l, n)
	case "api-request-shape":
		c.requestShape(l, n)
	case "cost-state":
		c.costState(l, n)
	default:
		c.skip(l, n)
	}
}

// requestShape takes the system prompt and the tool definitions from the
// first api-request-shape (2.1.3xx writes one before the requests that
// use it): the header's system, and attrs tool_definitions (verbatim, as
// sent), so replay and fork offer the tools the session had. A later
// shape (the tools changed mid-session) is noted.
func (c *ccImport) requestShape(l ccLine, n int) {
	var sh struct {
		System json.RawMessage   `json:"system"`
		Tools  []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(l.Shape, &sh); err != nil || len(l.Shape) == 0 {
		c.b.note(n, CodeBadLine, "api-request-shape without a readable shape; skipped")
		return
	}
	switch {
	case c.shapeHash == "":
		c.shapeHash = l.ShapeHash
		c.b.hdr.System = textOf(sh.System)
		if sh.Tools == nil {
			sh.Tools = []json.RawMessage{}
		}
		c.b.attrs["tool_definitions"] = sh.Tools
		c.b.attrs["source_request_shape"] = l.ShapeHash
		c.b.note(n, CodeKeptInAttrs, "api-request-shape %s: the system prompt and %d tool definitions, in the header", excerpt(l.ShapeHash, 12), len(sh.Tools))
	case l.ShapeHash != c.shapeHash:
		c.b.note(n, CodeSkipped, "another api-request-shape (%s, %d tool definitions); the header keeps the first", excerpt(l.ShapeHash, 12), len(sh.Tools))
	default:
		c.b.note(n, CodeSkipped, "api-request-shape %s again", excerpt(l.ShapeHash, 12))
	}
}

// costState keeps Claude Code's own cost of the session (the latest
// cost-state: it is a running total) beside agentctl's, in the header's
// attrs source_cost_usd and source_model_usage.
func (c *ccImport) costState(l ccLine, n int) {
	if l.TotalCostUSD == nil {
		c.b.note(n, CodeSkipped, "cost-state without totalCostUSD")
		return
	}
	c.b.attrs["source_cost_usd"] = *l.TotalCostUSD
	if len(l.ModelUsage) > 0 {
		c.b.attrs["source_model_usage"] = l.ModelUsage
	}
	c.b.note(n, CodeKeptInAttrs, "cost-state: Claude Code's cost $%g, in the header's attrs source_cost_usd", *l.TotalCostUSD)
}

// source takes the header's facts from the first line that has them.
func (c *ccImport) source(l ccLine) {
	if c.srcID == "" && l.SessionID != "" {
		c.srcID, c.version = l.SessionID, l.Version
		if l.Cwd != "" {
			c.b.attrs["source_cwd"] = l.Cwd
		}
		if l.GitBranch != "" {
			c.b.attrs["git_branch"] = l.GitBranch
		}
	}
	if c.agentID == "" && l.AgentID != "" && l.IsSidechain {
		c.agentID = l.AgentID
	}
}

// assistant adds an assistant line to its response (one message.id, as
// many lines as it has blocks when streamed).
func (c *ccImport) assistant(l ccLine, n int, ts time.Time) {
	m := l.Message
	if m == nil {
		c.b.note(n, CodeBadLine, "an assistant line without a message; skipped")
		return
	}
	if c.b.hdr.Model == "" {
		c.b.hdr.Model = m.Model
	}
	if !c.resp.same(m.ID) {
		t := turn{ts: ts, provider: "anthropic", model: m.Model, responseID: m.ID, attrs: map[string]any{}}
		if l.RequestID != "" {
			t.callAttrs = map[string]any{"request_id": l.RequestID}
		}
		c.resp.start(c.b, t, m.ID, n)
	}
	cur := c.resp.turn
	// Each line of a streamed response repeats its usage as far as it
	// got: the last line holds the final counts.
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
			cur.appendText(bl.Text)
		case "tool_use", "server_tool_use":
			tc := session.ToolCall{ID: bl.ID, Name: bl.Name, Args: argsObject(bl.Input)}
			cur.calls = append(cur.calls, tc)
			c.resp.intent(tc, ts, n)
		default: // thinking, redacted_thinking, images…: verbatim
			keepVerbatim(cur.attrs, bl.Type, x)
		}
	}
}

// user imports a user line: the results of the open response's calls
// (2.1.x streams each call's result before the next call's line), or a
// prompt, a meta line or a compaction summary.
func (c *ccImport) user(l ccLine, n int, ts time.Time) {
	m := l.Message
	if m == nil {
		c.b.note(n, CodeBadLine, "a user line without a message; skipped")
		return
	}
	var blocks []ccBlock
	text := ""
	if len(m.Content) > 0 && m.Content[0] == '"' {
		_ = json.Unmarshal(m.Content, &text)
	} else {
		_ = json.Unmarshal(m.Content, &blocks)
	}
	onlyResults := text == "" && len(blocks) > 0
	for _, bl := range blocks {
		onlyResults = onlyResults && bl.Type == "tool_result"
	}
	if onlyResults {
		c.results(l, blocks, n, ts)
		return
	}
	c.resp.flush(c.b)
	switch {
	case l.IsMeta:
		c.b.note(n, CodeSkipped, "meta user line (%s); not part of the conversation", excerpt(text+blockText(blocks), 60))
	case l.IsCompactSummary:
		c.b.add(session.Event{Kind: session.KindCompaction, TS: ts, Through: c.b.lastSeq(), Summary: text + blockText(blocks)})
	default:
		c.prompt(m.Content, text, n, ts)
	}
}

// results queues the tool results of a line behind the open response,
// with the sub-agent its toolUseResult names and the non-text blocks of
// each.
func (c *ccImport) results(l ccLine, blocks []ccBlock, n int, ts time.Time) {
	for _, bl := range blocks {
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
				keepVerbatim(attrs, t.Type, x)
			}
		}
		c.resp.result(n, bl.ToolUseID, resultContent(bl.Content), okOrError(bl.IsError), ts, attrs)
	}
}

// prompt adds a user message: its text, its other blocks verbatim, and
// any result mixed in (rare) as a result still.
func (c *ccImport) prompt(content json.RawMessage, text string, n int, ts time.Time) {
	var parts []string
	attrs := map[string]any{}
	if text != "" {
		parts = append(parts, text)
	}
	for _, x := range rawBlocks(content) {
		var bl ccBlock
		_ = json.Unmarshal(x, &bl)
		switch bl.Type {
		case "text":
			parts = append(parts, bl.Text)
		case "tool_result":
			c.b.result(n, bl.ToolUseID, resultContent(bl.Content), okOrError(bl.IsError), "", ts, 0, nil)
		default:
			keepVerbatim(attrs, bl.Type, x)
		}
	}
	if len(parts) > 0 || len(attrs) > 0 {
		c.lastUser = c.b.add(session.Event{Kind: session.KindUserMessage, TS: ts, Text: strings.Join(parts, "\n"), Attrs: marshalAttrs(attrs)})
	}
}

// attachment keeps an attachment line in the attrs of the user message
// before it.
func (c *ccImport) attachment(l ccLine, n int) {
	if c.lastUser == 0 {
		c.b.note(n, CodeSkipped, "attachment (%s) before any user message", attachmentType(l.Attachment))
		return
	}
	e := &c.b.evs[c.lastUser-2]
	attrs := map[string]any{}
	_ = json.Unmarshal(e.Attrs, &attrs)
	list, _ := attrs["attachments"].([]any)
	attrs["attachments"] = append(list, l.Attachment)
	e.Attrs = marshalAttrs(attrs)
	c.b.note(n, CodeKeptInAttrs, "attachment (%s) kept in the attrs of the user message at seq %d", attachmentType(l.Attachment), c.lastUser)
}

// skip notes a line that is not part of the conversation.
func (c *ccImport) skip(l ccLine, n int) {
	switch l.Type {
	case "system":
		if l.Subtype == "compact_boundary" {
			c.b.note(n, CodeSkipped, "compact boundary; the compaction is the summary line that follows")
		} else {
			c.b.note(n, CodeSkipped, "system line (%s); not part of the conversation", l.Subtype)
		}
	case "queue-operation":
		var q string
		_ = json.Unmarshal(l.Content, &q)
		if q != "" {
			c.b.note(n, CodeSkipped, "queued prompt (%s) %q; the user line that delivers it, if any, is imported", l.Operation, excerpt(q, 60))
		} else {
			c.b.note(n, CodeSkipped, "queue operation %s", l.Operation)
		}
	case "summary", "file-history-snapshot", "last-prompt", "custom-title", "progress":
		c.b.note(n, CodeSkipped, "%s line; not part of the conversation", l.Type)
	case "api-request":
		c.b.note(n, CodeSkipped, "api-request line: a request's parameters and the hashes of its messages (the conversation is the user and assistant lines)")
	case "api-request-blob":
		c.b.note(n, CodeSkipped, "api-request-blob line: a request message by its hash (the conversation is the user and assistant lines)")
	case "tools-used", "atis-latch":
		c.b.note(n, CodeSkipped, "%s line; bookkeeping, not part of the conversation", l.Type)
	default:
		c.b.note(n, CodeUnknownRecord, "line type %q is not one this importer knows; skipped", l.Type)
	}
}

// finish completes the header: the source's id and version, the last
// response's stop reason as its end state, the sub-agent it is.
func (c *ccImport) finish(path string) (*Session, string, error) {
	b := c.b
	if c.srcID == "" && len(b.evs) == 0 {
		return nil, "", fmt.Errorf("import claude-code %s: no user or assistant lines; is this a Claude Code session transcript?", path)
	}
	if c.shapeHash == "" {
		b.notRecorded("system prompt", "tool definitions")
	}
	b.hdr.Name = "claude-code " + c.srcID
	b.attrs["source_session_id"] = c.srcID
	if c.version != "" {
		b.attrs["source_version"] = c.version
	}
	lastStop := ""
	if b.lastCall >= 0 {
		lastStop = b.evs[b.lastCall].FinishReason
	}
	b.endState(lastStop)
	if c.sidechain && c.agentID != "" {
		b.attrs["agent_id"] = c.agentID
		b.hdr.Name = "claude-code " + c.srcID + " agent " + c.agentID
	}
	return b.finish(""), c.srcID, nil
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
	called, answered := callsOfChain(recs, onChain)
	for i, r := range recs {
		if onChain[i] || r.l.UUID == "" || r.l.ParentUUID == nil {
			continue
		}
		if p, ok := byUUID[*r.l.ParentUUID]; !ok || !onChain[p] {
			continue
		}
		ids, ok := ccResultIDs(r.l)
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

// callsOfChain gives the calls the chain's lines make, and those its
// lines answer.
func callsOfChain(recs []ccRec, onChain map[int]bool) (called, answered map[string]bool) {
	called, answered = map[string]bool{}, map[string]bool{}
	for i, r := range recs {
		if !onChain[i] {
			continue
		}
		for _, id := range ccCallIDs(r.l) {
			called[id] = true
		}
		if ids, ok := ccResultIDs(r.l); ok {
			for _, id := range ids {
				answered[id] = true
			}
		}
	}
	return called, answered
}

// ccCallIDs gives the calls an assistant line makes.
func ccCallIDs(l ccLine) []string {
	if l.Type != "assistant" || l.Message == nil {
		return nil
	}
	var ids []string
	for _, x := range rawBlocks(l.Message.Content) {
		var bl ccBlock
		if json.Unmarshal(x, &bl) == nil && (bl.Type == "tool_use" || bl.Type == "server_tool_use") {
			ids = append(ids, bl.ID)
		}
	}
	return ids
}

// ccResultIDs gives the calls a user line answers, when it holds only
// tool results (ok false otherwise).
func ccResultIDs(l ccLine) ([]string, bool) {
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

// excerpt is s on one line, cut to n characters.
func excerpt(s string, n int) string {
	return clip.Runes(strings.Join(strings.Fields(s), " "), n)
}

func init() {
	Register(Format{
		Name:      FormatClaudeCode,
		Doc:       "Claude Code session JSONL (~/.claude/projects/<dir>/<id>.jsonl);\nits sub-agent files beside it become child sessions",
		Exts:      []string{".jsonl"},
		Detect:    detectClaudeCode,
		Import:    importClaudeCodeFile,
		Companion: claudeCodeCompanion,
	})
}

// ccConversationTypes are the line types of the conversation, each with
// the parentUuid, uuid and sessionId keys.
var ccConversationTypes = map[string]bool{"user": true, "assistant": true, "system": true, "attachment": true, "progress": true}

// detectClaudeCode claims JSON lines each with a string "type", at least
// one of them a conversation line (parentUuid and sessionId: no other
// tool writes that pair) or a bookkeeping line Claude Code alone
// writes (a summary's leafUuid, a file-history-snapshot's messageId). A
// "sessionId" alone is not enough: Gemini CLI and Copilot CLI write one.
func detectClaudeCode(h *Head) bool {
	lines, ok := h.Lines()
	if !ok {
		return false
	}
	claimed := false
	for _, l := range lines {
		t := StringOf(l, "type")
		if t == "" {
			return false
		}
		switch {
		case ccConversationTypes[t] && hasKeys(l, "parentUuid", "sessionId"):
			claimed = true
		case (t == "summary" || t == "last-prompt") && hasKeys(l, "leafUuid"),
			t == "file-history-snapshot" && hasKeys(l, "messageId", "snapshot"),
			t == "queue-operation" && hasKeys(l, "operation", "sessionId"):
			claimed = true
		}
	}
	return claimed
}

const whySubagent = "a Claude Code sub-agent file"

// claudeCodeCompanion: a sub-agent file comes in with its session's file.
func claudeCodeCompanion(path string) string {
	name := filepath.Base(path)
	if filepath.Ext(name) == ".jsonl" && (strings.HasPrefix(name, "agent-") || filepath.Base(filepath.Dir(path)) == "subagents") {
		return whySubagent
	}
	return ""
}
