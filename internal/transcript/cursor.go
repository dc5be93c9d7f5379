package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/agentctl/agentctl/internal/session"
)

// FormatCursor is the transcript Cursor's agent (the IDE's, the
// cursor-agent CLI's, the @cursor/sdk local agent's) writes under
// ~/.cursor/projects/<project>/agent-transcripts/.
const FormatCursor = "cursor"

// How Cursor writes a transcript (its TranscriptStore, in @cursor/sdk
// 1.0.32's agent-transcript module): from the conversation's messages,
// system messages left out, and the first of two leading user messages
// (the context one) dropped. Two forms:
//
// <id>/<id>.jsonl (older builds: <id>.jsonl), one message a line:
//
//	{"role":"user","message":{"content":[{"type":"text","text":"<user_query>\n…\n</user_query>"}]}}
//	{"role":"assistant","message":{"content":[{"type":"text","text":"…"},{"type":"tool_use","name":"Shell","input":{…}}]}}
//
// a message's thinking joined to its text by a blank line, tool messages
// left out; then {"type":"turn_ended","status":…,"error"?} when a turn
// ends, and a first line {"type":"metadata","metadata":{"overview":…}}
// when it wrote an overview.
//
// <id>.txt: the messages joined by blank lines, each "user:\n" or
// "assistant:\n" then its parts, a line each: the text, "[Thinking] …",
// "[Tool call] Name" with "  key: value" lines (a value may run over
// several lines), "[Image]", "[File: name]"; a tool message is its
// "[Tool result] Name" lines alone; "Turn ended: …" at the end.
//
// Neither form carries times, tokens, the model, tool call ids or what a
// tool returned: the session says so (not_recorded) and invents none of
// them. A tool call's id is made from where it is (line and block).
//
// Not read: the writer's third form, <id>.json ({mode, messages}), of
// which no real file was found (the SDK writes the JSONL, the IDE file
// found is the text form).
//
// A sub-agent's transcript is <id>/subagents/<child>.jsonl beside its
// parent's <id>/<id>.jsonl (the SDK's local agent runs a Task call's
// sub-agent as a conversation of its own, id a random UUID, whose prompt
// is the Task's): it imports with its parent, as its child. Neither file
// names the other's call or id (the child's id goes back to the backend
// in the exec result, which no transcript holds); what ties them is the
// prompt, the Task call's input.prompt being the child's first prompt.
// See linkCursorChildren.

// cursorMaxBytes bounds the file read: Cursor leaves a message over 5 MB
// out of its transcripts, so a real one is far smaller; a larger file is
// refused, not read into memory.
const cursorMaxBytes = 256 << 20

// cursorNotRecorded is what neither form carries.
var cursorNotRecorded = []string{session.NotRecordedTimes, session.NotRecordedUsage, "model", "system prompt", "tool definitions", "tool call ids", "tool results"}

// cursorLine is one line of the JSONL form.
type cursorLine struct {
	Role    string `json:"role"`
	Message *struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	Type     string          `json:"type"`
	Status   string          `json:"status"`
	Error    string          `json:"error"`
	Metadata json.RawMessage `json:"metadata"`
}

type cursorBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// cursorImport is one transcript being imported.
type cursorImport struct {
	b      *builder
	status string
	// msgs counts the user and assistant messages read.
	msgs int
}

// importCursor imports a transcript and, for a parent's <id>/<id> file,
// the sub-agents' transcripts in its subagents/ folder, as its children.
func importCursor(path string) ([]*Session, error) {
	c, err := readCursor(path)
	if err != nil {
		return nil, err
	}
	files := cursorSubagentFiles(path)
	if len(files) > 0 {
		c.b.notRecorded(cursorNoSubagentID)
	}
	parent := c.finish()
	var children []*Session
	for _, f := range files {
		cc, err := readCursor(f)
		if err != nil {
			parent.Report.Notes = append(parent.Report.Notes, Note{Code: CodeNotImported, Detail: fmt.Sprintf("sub-agent file %s not imported: %v", f, err)})
			continue
		}
		children = append(children, cc.finish())
	}
	linkCursorChildren(parent, children)
	return []*Session{parent}, nil
}

// cursorNoSubagentID is what a parent with sub-agents does not record.
const cursorNoSubagentID = "which sub-agent a Task call started (tied by its prompt)"

// cursorSubagentFiles lists the sub-agents' transcripts of the parent at
// path, in the form of the parent's (a parent written in both forms
// brings each child in once): Cursor writes the parent to <id>/<id>.ext
// and a sub-agent to <id>/subagents/<child>.ext (the SDK's
// agent-transcript module, its path for a conversation of kind
// "subagent").
func cursorSubagentFiles(path string) []string {
	ext := filepath.Ext(path)
	dir := filepath.Dir(path)
	if filepath.Base(dir) != strings.TrimSuffix(filepath.Base(path), ext) {
		return nil
	}
	files, _ := filepath.Glob(filepath.Join(dir, "subagents", "*"+ext))
	sort.Strings(files)
	return files
}

// linkCursorChildren makes each child a sub-agent of the parent, its
// markers right after the Task call whose input.prompt is the child's
// first prompt, when that prompt is one call's and one child's alone.
// A child no Task call's prompt names, or whose prompt several calls or
// children share, is placed at the parent's end and said so: the files
// do not record which call started it, and a guess would look like a
// record. The sub-agent's output is its last response (the Task's result,
// the SDK's final_message, is not written either).
func linkCursorChildren(parent *Session, children []*Session) {
	calls := map[string][]string{}
	for _, e := range parent.Events {
		var in struct {
			Prompt string `json:"prompt"`
		}
		if e.Kind == session.KindToolIntent && e.Tool == "Task" && json.Unmarshal(e.Args, &in) == nil && in.Prompt != "" {
			p := strings.TrimSpace(in.Prompt)
			calls[p] = append(calls[p], e.CallID)
		}
	}
	prompts := make([]string, len(children))
	byPrompt := map[string]int{}
	for i, ch := range children {
		for _, e := range ch.Events {
			if e.Kind == session.KindUserMessage {
				prompts[i] = strings.TrimSpace(e.Text)
				break
			}
		}
		byPrompt[prompts[i]]++
	}
	// intentSeq is where the call's intent is now: seqs move as markers
	// go in before them.
	intentSeq := func(id string) int64 {
		for _, e := range parent.Events {
			if e.Kind == session.KindToolIntent && e.CallID == id {
				return e.Seq
			}
		}
		return 0
	}
	tied := map[*Session]string{}
	for i, ch := range children {
		p := prompts[i]
		if ids := calls[p]; p != "" && len(ids) == 1 && byPrompt[p] == 1 {
			tied[ch] = ids[0]
			linkAfter(parent, ch, intentSeq(ids[0]), lastAssistantText(ch.Events))
			continue
		}
		why := "no Task call's prompt is its first prompt"
		if n := len(calls[p]); n > 1 || byPrompt[p] > 1 {
			why = fmt.Sprintf("its first prompt is that of %d Task calls and %d sub-agents", n, byPrompt[p])
		}
		linkAfter(parent, ch, 0, lastAssistantText(ch.Events))
		parent.Report.Notes = append(parent.Report.Notes, Note{Code: CodeSubagent,
			Detail: fmt.Sprintf("%s placed at the end: %s, and the transcript records no sub-agent id", ch.Report.File, why)})
	}
	// A tied child's header names its Task call, where it ended up.
	for ch, id := range tied {
		ch.Events[0].ParentSeq = intentSeq(id)
	}
}

// readCursor reads either form: each user message a prompt, each
// assistant message one response with its calls as intents.
func readCursor(path string) (*cursorImport, error) {
	data, file, err := readSourceMax(path, cursorMaxBytes)
	if err != nil {
		return nil, err
	}
	c := &cursorImport{b: newBuilder(FormatCursor, file, data)}
	c.b.hdr.Provider = "cursor"
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	c.b.hdr.Name = "cursor " + stem
	if stem == filepath.Base(filepath.Dir(path)) || cursorID.MatchString(stem) {
		// Cursor names the file by the conversation's id.
		c.b.attrs["source_session_id"] = stem
	}
	if isCursorText(data) {
		c.b.attrs["source_form"] = "txt"
		c.text(data)
	} else {
		c.b.attrs["source_form"] = "jsonl"
		readLines(data, c.b, c.line)
	}
	if c.msgs == 0 {
		return nil, fmt.Errorf("import cursor %s: no user or assistant message; is this a Cursor agent transcript (agent-transcripts/<id>/<id>.jsonl or <id>.txt)?", path)
	}
	c.b.notRecorded(cursorNotRecorded...)
	return c, nil
}

// finish ends the session. No tool call has a result in the file, by
// design: said once, in not_recorded, not as a no_result note per call.
func (c *cursorImport) finish() *Session {
	for _, ci := range c.b.calls {
		ci.answered = true
	}
	c.b.endState(c.status)
	return c.b.finish("")
}

// cursorID is a conversation id as Cursor names its files (a UUID, the
// SDK's agent-<uuid>).
var cursorID = regexp.MustCompile(`^(agent-)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// line imports one line of the JSONL form: a message is one response
// (an assistant's) or one prompt (a user's).
func (c *cursorImport) line(n int, raw []byte) error {
	var l cursorLine
	if err := json.Unmarshal(raw, &l); err != nil {
		return err
	}
	b := c.b
	switch {
	case l.Type == "turn_ended":
		// The last turn's end is the session's end state; a turn that
		// failed is an error (an aborted one, the user's stop, is not).
		c.status = l.Status
		if l.Status == "error" {
			b.add(session.Event{Kind: session.KindError, Reason: "source_error", Error: l.Error,
				Attrs: marshalAttrs(map[string]any{"source_status": l.Status})})
		}
	case l.Type == "metadata":
		var m struct {
			Overview string `json:"overview"`
		}
		if json.Unmarshal(l.Metadata, &m) == nil && m.Overview != "" {
			b.attrs["source_overview"] = m.Overview
		}
	case l.Message == nil || (l.Role != "user" && l.Role != "assistant"):
		b.note(n, CodeUnknownRecord, "a line that is neither a user or assistant message nor turn_ended or metadata (role %q, type %q); skipped", l.Role, l.Type)
	default:
		var blocks []cursorBlock
		if err := json.Unmarshal(l.Message.Content, &blocks); err != nil {
			return fmt.Errorf("message.content: %w", err)
		}
		var texts []string
		var calls []session.ToolCall
		attrs := map[string]any{}
		for i, blk := range blocks {
			switch blk.Type {
			case "text":
				texts = append(texts, blk.Text)
			case "tool_use":
				calls = append(calls, session.ToolCall{ID: fmt.Sprintf("l%d.%d", n, i), Name: blk.Name, Args: argsObject(blk.Input)})
			default:
				raw, _ := json.Marshal(blk)
				keepVerbatim(attrs, "content", raw)
				b.note(n, CodeKeptInAttrs, "a %q block, kept verbatim in the message's attrs", blk.Type)
			}
		}
		c.message(n, l.Role, strings.Join(texts, "\n"), calls, attrs)
	}
	return nil
}

// message adds one message: a user's prompt (its <user_query>, the rest
// of the text kept in attrs) or an assistant's response and the intents
// of its calls.
func (c *cursorImport) message(n int, role, text string, calls []session.ToolCall, attrs map[string]any) {
	b := c.b
	c.msgs++
	if role == "user" {
		q, rest := userQuery(text)
		if rest != "" {
			attrs["context"] = rest
		}
		b.add(session.Event{Kind: session.KindUserMessage, Text: q, Attrs: marshalAttrs(attrs)})
		return
	}
	b.addTurn(turn{text: text, calls: calls, provider: "cursor", attrs: attrs}, n)
	for _, tc := range calls {
		b.intent(tc, b.lastTS())
	}
}

// userQuery is the prompt inside <user_query>…</user_query> and the text
// around it (the context Cursor sent with it); the whole text when it has
// no such tag.
func userQuery(text string) (query, rest string) {
	const open, end = "<user_query>", "</user_query>"
	i := strings.Index(text, open)
	j := strings.LastIndex(text, end)
	if i < 0 || j < i {
		return text, ""
	}
	query = strings.TrimSpace(text[i+len(open) : j])
	rest = strings.TrimSpace(text[:i] + text[j+len(end):])
	return query, rest
}

// The text form's markers, as Cursor's TranscriptStore writes them.
var (
	cursorArgLine  = regexp.MustCompile(`^  ([A-Za-z0-9_.\-]+): (.*)$`)
	cursorTurnEnd  = regexp.MustCompile(`^Turn ended: (success|error|aborted)(?:[.:] ?(.*))?$`)
	cursorCallLine = "[Tool call] "
	cursorResult   = "[Tool result] "
	cursorThinking = "[Thinking]"
)

// isCursorText reports whether data is the text form: it starts with a
// "user:" line and has an "assistant:" line after a blank one, or, when
// the first message is longer than what is read of it, its second line
// opens one of the tags Cursor puts in a user message.
func isCursorText(data []byte) bool {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	rest, ok := bytes.CutPrefix(data, []byte("user:\n"))
	if !ok {
		return false
	}
	return bytes.Contains(data, []byte("\n\nassistant:\n")) || cursorUserTag.Match(rest)
}

// cursorUserTag is the start of a user message's first line as Cursor
// writes it: the prompt's tag, or one of the context tags its
// TranscriptStore knows (and newer versions strip).
var cursorUserTag = regexp.MustCompile(`^<(user_query|timestamp|external_links|attached_files|user_info|project_layout|rules|user_rules|` +
	`open_and_recently_viewed_files|system_reminder|git_status|agent_transcripts|cursor_rules_context|agent_skills|available_skills|` +
	`mcp_instructions|system_notification|task_notification|agent_notification)>\n`)

// textMsg is one message of the text form being read.
type textMsg struct {
	role     string
	line     int
	text     []string
	thinking []string
	calls    []session.ToolCall
	// args are the last call's arguments so far, in order; a line that
	// starts none adds to the last one's value.
	args    []cursorArg
	inCall  bool
	inThink bool
}

type cursorArg struct {
	key, val string
	// lines: the lines the value ran over after its first.
	lines int
}

// cursorArgKeys are the argument names of Cursor's tools (Read, Write,
// StrReplace, Shell, Grep, Glob, Task, TodoWrite, ...), as its
// transcripts show them.
var cursorArgKeys = map[string]bool{
	"path": true, "paths": true, "contents": true, "old_string": true, "new_string": true, "replace_all": true,
	"command": true, "description": true, "working_directory": true, "timeout": true, "block_until_ms": true,
	"is_background": true, "todos": true, "merge": true, "pattern": true, "glob": true, "glob_pattern": true,
	"output_mode": true, "target_directory": true, "offset": true, "limit": true, "subagent_type": true,
	"prompt": true, "model": true, "resume": true, "url": true, "search_term": true, "explanation": true,
	"target_mode_id": true, "query": true, "filename": true, "reference_image_paths": true,
}

// newArg reports whether a "  key: value" line starts the call's next
// argument rather than continuing the last one's value (a file's
// contents hold such lines: CSS, YAML). The form cannot tell them apart;
// a key the call already has continues the value, and after a value of
// several lines only one of Cursor's argument names starts another.
func (m *textMsg) newArg(key string) bool {
	for _, a := range m.args {
		if a.key == key {
			return false
		}
	}
	return len(m.args) == 0 || m.args[len(m.args)-1].lines == 0 || cursorArgKeys[key]
}

// text imports the text form. A message starts at a "user:" or
// "assistant:" line after a blank one (or the file's start); a blank line
// then "[Tool result] Name" lines is a tool message, the results of the
// calls before it, whose content the file does not hold.
func (c *cursorImport) text(data []byte) {
	lines := strings.Split(strings.TrimPrefix(string(data), "\ufeff"), "\n")
	var cur *textMsg
	flush := func() {
		if cur == nil {
			return
		}
		c.b.records++
		cur.endCall()
		text := strings.Trim(strings.Join(cur.text, "\n"), "\n")
		attrs := map[string]any{}
		if len(cur.thinking) > 0 {
			attrs["reasoning"] = strings.Join(cur.thinking, "\n")
		}
		c.message(cur.line, cur.role, text, cur.calls, attrs)
		cur = nil
	}
	blank := true
	for i, l := range lines {
		n := i + 1
		switch {
		case blank && (l == "user:" || l == "assistant:"):
			flush()
			cur = &textMsg{role: strings.TrimSuffix(l, ":"), line: n}
		case strings.HasPrefix(l, cursorResult) && (cur == nil || blank && cur.role != "user"):
			// A tool message: the result of a call before it, its output
			// not written.
			flush()
			c.b.records++
		case cursorTurnEnd.MatchString(l) && blank && restBlank(lines[i+1:]):
			flush()
			m := cursorTurnEnd.FindStringSubmatch(l)
			c.status = m[1]
			if m[1] == "error" {
				c.b.add(session.Event{Kind: session.KindError, Reason: "source_error", Error: m[2]})
			}
		case cur == nil:
			if strings.TrimSpace(l) != "" {
				c.b.note(n, CodeUnknownRecord, "a line outside any message; skipped")
			}
		default:
			cur.add(l, n)
		}
		blank = l == ""
	}
	flush()
}

// restBlank reports whether every line is empty.
func restBlank(lines []string) bool {
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			return false
		}
	}
	return true
}

// add reads one line of a message.
func (m *textMsg) add(l string, n int) {
	if m.role == "assistant" {
		switch {
		case strings.HasPrefix(l, cursorCallLine):
			m.endCall()
			m.inThink = false
			m.inCall = true
			m.calls = append(m.calls, session.ToolCall{ID: fmt.Sprintf("l%d", n), Name: strings.TrimSpace(strings.TrimPrefix(l, cursorCallLine))})
			return
		case l == cursorThinking || strings.HasPrefix(l, cursorThinking+" "):
			m.endCall()
			m.inThink = true
			m.thinking = append(m.thinking, strings.TrimPrefix(strings.TrimPrefix(l, cursorThinking), " "))
			return
		}
	}
	switch {
	case m.inCall:
		if a := cursorArgLine.FindStringSubmatch(l); a != nil && m.newArg(a[1]) {
			m.args = append(m.args, cursorArg{key: a[1], val: a[2]})
		} else if len(m.args) > 0 {
			last := &m.args[len(m.args)-1]
			last.val += "\n" + l
			last.lines++
		}
	case m.inThink:
		// The form does not mark where a thought of several lines ends
		// and the text begins (Cursor writes the text on the next line):
		// the thought's first line is its reasoning, the lines after it
		// the text, so nothing is dropped either way.
		m.inThink = false
		m.text = append(m.text, l)
	default:
		m.text = append(m.text, l)
	}
}

// endCall closes the arguments of the last call: each "key: value" a
// string, or the JSON Cursor wrote for an object or a list.
func (m *textMsg) endCall() {
	if !m.inCall || len(m.calls) == 0 {
		m.inCall = false
		return
	}
	obj := map[string]any{}
	for _, a := range m.args {
		v := strings.TrimRight(a.val, "\n")
		var x any
		if (strings.HasPrefix(v, "{") || strings.HasPrefix(v, "[")) && json.Unmarshal([]byte(v), &x) == nil {
			obj[a.key] = x
		} else {
			obj[a.key] = v
		}
	}
	raw, _ := json.Marshal(obj)
	m.calls[len(m.calls)-1].Args = raw
	m.args, m.inCall = nil, false
}

func init() {
	Register(Format{
		Name: FormatCursor,
		Doc: "Cursor agent transcripts (~/.cursor/projects/<project>/agent-transcripts/<id>/<id>.jsonl, or <id>.txt;\n" +
			"its sub-agents in <id>/subagents/ as child sessions): no times, tokens, model or tool results (not_recorded)",
		Exts:      []string{".jsonl", ".txt"},
		Detect:    detectCursor,
		Import:    importCursor,
		Companion: cursorCompanion,
	})
}

// cursorCompanion: a sub-agent's transcript, in its parent's subagents/
// folder, comes in with its parent's file.
func cursorCompanion(path string) string {
	if filepath.Base(filepath.Dir(path)) == "subagents" {
		return "a Cursor sub-agent transcript"
	}
	return ""
}

// detectCursor claims the JSONL form, whose every line in the head is a
// {role, message: {content: [...]}} with no other key (role user or
// assistant), a turn_ended or a metadata line, with at least one
// message; or the text form, which starts with a "user:" line and has an
// "assistant:" line after a blank one in the head.
func detectCursor(h *Head) bool {
	if isCursorText(h.Bytes) {
		return true
	}
	lines, ok := h.Lines()
	if !ok {
		return false
	}
	msgs := 0
	for _, l := range lines {
		switch {
		case len(l) == 2 && hasKeys(l, "role", "message"):
			role := StringOf(l, "role")
			if role != "user" && role != "assistant" {
				return false
			}
			// A message the head cuts short (a long pasted prompt) is
			// judged by its keys; a whole one holds only its content list.
			if msg := l["message"]; len(msg) > 0 {
				var m map[string]json.RawMessage
				if json.Unmarshal(msg, &m) != nil || len(m) != 1 || !bytes.HasPrefix(bytes.TrimSpace(m["content"]), []byte("[")) {
					return false
				}
			}
			msgs++
		case StringOf(l, "type") == "turn_ended" && hasKeys(l, "status"):
		case StringOf(l, "type") == "metadata" && len(l) == 2 && hasKeys(l, "metadata"):
		default:
			return false
		}
	}
	return msgs > 0
}
