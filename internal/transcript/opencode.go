package transcript

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/session"
)

// FormatOpenCode is opencode's SQLite database.
const FormatOpenCode = "opencode"

func init() {
	Register(Format{
		Name:   FormatOpenCode,
		Doc:    "opencode's SQLite database (~/.local/share/opencode/opencode.db):\none session per opencode session (its session/message/part tables,\nand the session_message table of its v2 session runner)",
		Exts:   []string{".db"},
		Detect: detectOpenCode,
		Import: importOpenCode,
	})
}

// detectOpenCode claims a SQLite database with opencode's session table
// and its conversation tables of either schema: message and part (the
// first session runner's), or session_message (the v2 runner's; 1.18
// writes both schemas' tables into one database, a later version may
// drop the first).
func detectOpenCode(h *Head) bool {
	return h.HasTables("session", "message", "part") || h.HasTables("session", "session_message")
}

// Bounds on what an opencode database may make an import hold.
const (
	ocMaxSessions = 100_000
	ocMaxRowBytes = 64 << 20 // one message's or part's data
)

// ocSession is a row of the session table.
type ocSession struct {
	ID, ProjectID, ParentID, Directory, Title, Version, Model string
	Cost                                                      float64
	Created, Updated                                          int64
	// rows are the session's message and part rows, for its content hash.
	rows []byte
}

// ocMessage is a message row with its data and parts.
type ocMessage struct {
	id      string
	created int64
	data    ocMessageData
	raw     json.RawMessage
	parts   []ocPart
}

type ocMessageData struct {
	Role       string    `json:"role"`
	ParentID   string    `json:"parentID"`
	ModelID    string    `json:"modelID"`
	ProviderID string    `json:"providerID"`
	Cost       *float64  `json:"cost"`
	Tokens     *ocTokens `json:"tokens"`
	Finish     string    `json:"finish"`
	Time       struct {
		Created   int64 `json:"created"`
		Completed int64 `json:"completed"`
	} `json:"time"`
	Error json.RawMessage `json:"error"`
	Model struct {
		ProviderID string `json:"providerID"`
		ModelID    string `json:"modelID"`
	} `json:"model"`
	Agent string `json:"agent"`
	Path  struct {
		Cwd string `json:"cwd"`
	} `json:"path"`
}

type ocTokens struct {
	Input     int64 `json:"input"`
	Output    int64 `json:"output"`
	Reasoning int64 `json:"reasoning"`
	Cache     struct {
		Read  int64 `json:"read"`
		Write int64 `json:"write"`
	} `json:"cache"`
}

// bill is the usage as agentctl counts it: input_tokens holds every
// input token billed; opencode's input excludes the cache reads and
// writes it counts apart.
func (t *ocTokens) bill() *pricing.Usage {
	if t == nil {
		return nil
	}
	return &pricing.Usage{Input: t.Input + t.Cache.Read + t.Cache.Write, CacheRead: t.Cache.Read, CacheCreation: t.Cache.Write, Output: t.Output}
}

type ocPart struct {
	id   string
	raw  json.RawMessage
	data ocPartData
}

type ocPartData struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Synthetic bool            `json:"synthetic"`
	Tool      string          `json:"tool"`
	CallID    string          `json:"callID"`
	State     ocToolState     `json:"state"`
	Reason    string          `json:"reason"`
	Tokens    *ocTokens       `json:"tokens"`
	Cost      *float64        `json:"cost"`
	Time      ocSpan          `json:"time"`
	Metadata  json.RawMessage `json:"metadata"`
}

type ocToolState struct {
	Status string          `json:"status"`
	Input  json.RawMessage `json:"input"`
	Output string          `json:"output"`
	Error  string          `json:"error"`
	Title  string          `json:"title"`
	Time   ocSpan          `json:"time"`
}

type ocSpan struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

func msTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// importOpenCode imports every session of an opencode database, oldest
// first. A session's id is derived from its own rows (not the file's,
// which changes with every other session): re-importing a session
// unchanged since gives the same id.
func importOpenCode(path string) ([]*Session, error) {
	f, err := openRegular(path) // a regular file, as every format's
	if err != nil {
		return nil, err
	}
	f.Close()
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	db, err := openSQLite(abs)
	if err != nil {
		return nil, fmt.Errorf("import opencode: %w", err)
	}
	defer db.Close()
	ctx := context.Background()
	tables, err := sqliteTables(abs)
	if err != nil {
		return nil, fmt.Errorf("import opencode %s: %w", path, err)
	}
	v1 := slices.Contains(tables, "message") && slices.Contains(tables, "part")
	v2 := slices.Contains(tables, "session_message")
	sessions, err := ocSessions(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("import opencode %s: %w", path, err)
	}
	if len(sessions) == 0 {
		return nil, fmt.Errorf("import opencode %s: the database holds no sessions", path)
	}
	var out []*Session
	for _, s := range sessions {
		var msgs []*ocMessage
		var rows []ocRow
		if v1 {
			if msgs, err = ocMessages(ctx, db, s); err != nil {
				return nil, fmt.Errorf("import opencode %s: session %s: %w", path, s.ID, err)
			}
		}
		if v2 {
			if rows, err = ocV2Rows(ctx, db, s); err != nil {
				return nil, fmt.Errorf("import opencode %s: session %s: %w", path, s.ID, err)
			}
		}
		// A session is written by one runner: its rows are in one schema.
		if len(rows) > 0 {
			out = append(out, ocV2Import(abs, s, rows, len(msgs)))
			continue
		}
		out = append(out, ocImport(abs, s, msgs))
	}
	return out, nil
}

func ocSessions(ctx context.Context, db *sql.DB) ([]*ocSession, error) {
	rows, err := db.QueryContext(ctx, `SELECT id, project_id, coalesce(parent_id, ''), directory, title, version,
		coalesce(model, ''), cost, time_created, time_updated FROM session ORDER BY time_created, id LIMIT ?`, ocMaxSessions+1)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*ocSession
	for rows.Next() {
		s := &ocSession{}
		if err := rows.Scan(&s.ID, &s.ProjectID, &s.ParentID, &s.Directory, &s.Title, &s.Version, &s.Model, &s.Cost, &s.Created, &s.Updated); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(out) > ocMaxSessions {
		return nil, fmt.Errorf("more than %d sessions; not imported", ocMaxSessions)
	}
	return out, rows.Err()
}

// ocMessages reads a session's messages, oldest first, each with its
// parts in order; rows too large are refused by name.
func ocMessages(ctx context.Context, db *sql.DB, s *ocSession) ([]*ocMessage, error) {
	rows, err := db.QueryContext(ctx, `SELECT id, time_created, length(data), CASE WHEN length(data) <= ? THEN data END
		FROM message WHERE session_id = ? ORDER BY time_created, id`, ocMaxRowBytes, s.ID)
	if err != nil {
		return nil, err
	}
	var msgs []*ocMessage
	byID := map[string]*ocMessage{}
	h := sha256.New()
	for rows.Next() {
		m := &ocMessage{}
		var n int64
		var data sql.NullString
		if err := rows.Scan(&m.id, &m.created, &n, &data); err != nil {
			rows.Close()
			return nil, err
		}
		if !data.Valid {
			rows.Close()
			return nil, fmt.Errorf("message %s: %d bytes of data, over the %d this import reads", m.id, n, ocMaxRowBytes)
		}
		m.raw = json.RawMessage(data.String)
		fmt.Fprintf(h, "message\x00%s\x00%d\x00%s\x00", m.id, m.created, data.String)
		msgs = append(msgs, m)
		byID[m.id] = m
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	prows, err := db.QueryContext(ctx, `SELECT id, message_id, length(data), CASE WHEN length(data) <= ? THEN data END
		FROM part WHERE session_id = ? ORDER BY message_id, id`, ocMaxRowBytes, s.ID)
	if err != nil {
		return nil, err
	}
	defer prows.Close()
	for prows.Next() {
		var p ocPart
		var mid string
		var n int64
		var data sql.NullString
		if err := prows.Scan(&p.id, &mid, &n, &data); err != nil {
			return nil, err
		}
		if !data.Valid {
			return nil, fmt.Errorf("part %s: %d bytes of data, over the %d this import reads", p.id, n, ocMaxRowBytes)
		}
		p.raw = json.RawMessage(data.String)
		fmt.Fprintf(h, "part\x00%s\x00%s\x00%s\x00", p.id, mid, data.String)
		if m := byID[mid]; m != nil {
			m.parts = append(m.parts, p)
		}
	}
	s.rows = h.Sum(nil)
	return msgs, prows.Err()
}

// ocImport maps one opencode session. Each step of an assistant message
// (the parts between step-start and step-finish: one model call) becomes
// an assistant_message and a model_call, with the step's tokens and
// opencode's cost beside agentctl's (attrs source_cost_usd); each tool
// part a tool_intent at its start and a tool_result at its end.
func ocImport(file string, s *ocSession, msgs []*ocMessage) *Session {
	b := ocHeader(file, s, "the session's message and part rows")
	rec := 0
	status := ""
	for _, m := range msgs {
		rec++
		if err := json.Unmarshal(m.raw, &m.data); err != nil {
			b.note(rec, CodeBadLine, "message %s: data is not a message (%v); skipped", m.id, err)
			rec += len(m.parts)
			continue
		}
		if b.hdr.Model == "" && m.data.ModelID != "" {
			b.hdr.Provider, b.hdr.Model = m.data.ProviderID, m.data.ModelID
		}
		switch m.data.Role {
		case "user":
			rec = ocUser(b, m, rec)
		case "assistant":
			rec = ocAssistant(b, m, rec)
			status = m.data.Finish
			if len(m.data.Error) > 0 && string(m.data.Error) != "null" {
				status = "error"
				b.attrs["source_error"] = m.data.Error
			}
		default:
			b.note(rec, CodeUnknownRecord, "message %s: role %q is not one this importer knows; skipped", m.id, m.data.Role)
			rec += len(m.parts)
		}
	}
	b.records = rec
	b.endState(status)
	return b.finish(s.ID)
}

// ocHeader starts the session of an opencode session row: its header
// from the row (of is what the content hash is of).
func ocHeader(file string, s *ocSession, of string) *builder {
	b := newBuilder(FormatOpenCode, file, s.rows)
	b.attrs["source_sha256_of"] = of
	b.hdr.TS = msTime(s.Created)
	b.hdr.Name = "opencode " + s.ID
	b.attrs["source_session_id"] = s.ID
	b.attrs["source_cwd"] = s.Directory
	b.attrs["source_version"] = s.Version
	if s.Title != "" {
		b.attrs["title"] = s.Title
	}
	if s.ParentID != "" {
		b.attrs["source_parent_session_id"] = s.ParentID
	}
	b.attrs["source_cost_usd"] = s.Cost
	var sm struct {
		ID         string `json:"id"`
		ProviderID string `json:"providerID"`
	}
	if json.Unmarshal([]byte(s.Model), &sm) == nil {
		b.hdr.Provider, b.hdr.Model = sm.ProviderID, sm.ID
	}
	b.notRecorded("system prompt", "tool definitions")
	return b
}

// ocUser writes a user message: its text parts, one user_message.
func ocUser(b *builder, m *ocMessage, rec int) int {
	text := ""
	attrs := map[string]any{}
	for _, p := range m.parts {
		rec++
		if err := json.Unmarshal(p.raw, &p.data); err != nil {
			b.note(rec, CodeBadLine, "part %s: not a part (%v); skipped", p.id, err)
			continue
		}
		switch p.data.Type {
		case "text":
			if p.data.Synthetic {
				keepVerbatim(attrs, "synthetic_text", p.raw) // context opencode added (a file's content)
				continue
			}
			if text != "" {
				text += "\n"
			}
			text += p.data.Text
		case "file", "agent", "subtask":
			keepVerbatim(attrs, p.data.Type, p.raw)
			b.note(rec, CodeKeptInAttrs, "part %s (%s) kept in the user_message's attrs", p.id, p.data.Type)
		default:
			b.note(rec, CodeUnknownRecord, "part %s: type %q is not one this importer knows in a user message; skipped", p.id, p.data.Type)
		}
	}
	b.add(session.Event{Kind: session.KindUserMessage, TS: msTime(m.data.Time.Created), Text: text, Attrs: marshalAttrs(attrs)})
	return rec
}

// ocAssistant writes an assistant message's steps.
func ocAssistant(b *builder, m *ocMessage, rec int) int {
	d := m.data
	var t *turn
	var tools []ocPart
	var last time.Time // the end of the step's latest text
	open := func() *turn {
		if t == nil {
			t = &turn{ts: msTime(d.Time.Created), provider: d.ProviderID, model: d.ModelID, attrs: map[string]any{},
				callAttrs: map[string]any{"source_message_id": m.id}}
			if d.Agent != "" {
				t.callAttrs["agent"] = d.Agent
			}
		}
		return t
	}
	// flush writes the open step and its tools' intents and results.
	flush := func(usage *ocTokens, cost *float64, reason string, at time.Time) {
		if t == nil {
			return
		}
		if usage != nil {
			t.usage = usage.bill()
			if usage.Reasoning > 0 {
				t.callAttrs["reasoning_tokens"] = usage.Reasoning
			}
		}
		if cost != nil {
			t.sourceCost = cost
		}
		t.finish = reason
		// The response came when its text ended, and before any of its
		// calls started: times never run backwards.
		for _, p := range tools {
			if st := msTime(p.data.State.Time.Start); !st.IsZero() && (at.IsZero() || st.Before(at)) {
				at = st
			}
		}
		if !at.IsZero() {
			t.ts = at
		}
		b.addTurn(*t, rec)
		for _, p := range tools {
			st := p.data.State
			start, end := msTime(st.Time.Start), msTime(st.Time.End)
			b.intent(session.ToolCall{ID: p.data.CallID, Name: p.data.Tool, Args: argsObject(st.Input)}, start)
			switch st.Status {
			case "completed":
				b.result(rec, p.data.CallID, st.Output, session.ResultOK, "", end, end.Sub(start).Milliseconds(), ocToolAttrs(st))
			case "error":
				b.result(rec, p.data.CallID, st.Output, session.ResultError, st.Error, end, end.Sub(start).Milliseconds(), ocToolAttrs(st))
			}
			// pending or running: the call has no result (noted at finish).
		}
		t, tools, last = nil, nil, time.Time{}
	}
	for _, p := range m.parts {
		rec++
		if err := json.Unmarshal(p.raw, &p.data); err != nil {
			b.note(rec, CodeBadLine, "part %s: not a part (%v); skipped", p.id, err)
			continue
		}
		if e := msTime(p.data.Time.End); p.data.Type != "tool" && e.After(last) {
			last = e
		}
		switch p.data.Type {
		case "step-start":
			flush(nil, nil, "", time.Time{})
			open()
		case "step-finish":
			open()
			flush(p.data.Tokens, p.data.Cost, p.data.Reason, last)
		case "text":
			open().appendText(p.data.Text)
		case "reasoning":
			keepVerbatim(open().attrs, "reasoning", p.raw)
		case "tool":
			tc := session.ToolCall{ID: p.data.CallID, Name: p.data.Tool, Args: argsObject(p.data.State.Input)}
			tt := open()
			tt.calls = append(tt.calls, tc)
			tools = append(tools, p)
		case "file", "patch", "snapshot", "agent", "subtask", "retry", "compaction":
			keepVerbatim(open().attrs, p.data.Type, p.raw)
			b.note(rec, CodeKeptInAttrs, "part %s (%s) kept in the assistant_message's attrs", p.id, p.data.Type)
		default:
			b.note(rec, CodeUnknownRecord, "part %s: type %q is not one this importer knows; skipped", p.id, p.data.Type)
		}
	}
	// A message without step-finish (cut short, or older opencode): its
	// own tokens and cost.
	if t != nil {
		if last.IsZero() {
			last = msTime(d.Time.Completed)
		}
		flush(d.Tokens, d.Cost, d.Finish, last)
	}
	return rec
}

func ocToolAttrs(st ocToolState) map[string]any {
	if st.Title == "" {
		return nil
	}
	return map[string]any{"title": st.Title}
}
