package transcript

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentctl/agentctl/internal/session"
)

// opencode's v2 session runner (the one behind its /api/session routes,
// in 1.18 beside the first) keeps a session's conversation in one table,
// session_message: a row per message, in the order of its seq (the
// session's event sequence), its type in a column and the rest of the
// message in data. The message types are those of opencode's
// Session.Message schema: user, synthetic, system, shell, assistant,
// agent-switched, model-switched and compaction. An assistant row is one
// step (one model call): its content is text, reasoning and tool items,
// a tool item carrying its state (pending, running, completed, error)
// and its times (created, ran, completed).

// ocRow is a session_message row.
type ocRow struct {
	id, typ string
	seq     int64
	created int64
	raw     json.RawMessage
}

// ocV2Message is the data of a session_message row (the fields of every
// message type this import reads).
type ocV2Message struct {
	Time struct {
		Created   int64 `json:"created"`
		Completed int64 `json:"completed"`
	} `json:"time"`
	Text   string          `json:"text"`
	Files  json.RawMessage `json:"files"`
	Agents json.RawMessage `json:"agents"`
	// assistant
	Agent string `json:"agent"`
	Model struct {
		ID         string `json:"id"`
		ProviderID string `json:"providerID"`
		Variant    string `json:"variant"`
	} `json:"model"`
	Content  []json.RawMessage `json:"content"`
	Snapshot json.RawMessage   `json:"snapshot"`
	Finish   string            `json:"finish"`
	Cost     *float64          `json:"cost"`
	Tokens   *ocTokens         `json:"tokens"`
	Error    *ocV2Error        `json:"error"`
	// shell
	CallID  string `json:"callID"`
	Command string `json:"command"`
	Output  string `json:"output"`
	// compaction
	Reason  string `json:"reason"`
	Summary string `json:"summary"`
}

type ocV2Error struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// ocV2Item is one item of an assistant message's content.
type ocV2Item struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Text  string `json:"text"`
	Name  string `json:"name"`
	State struct {
		Status     string            `json:"status"`
		Input      json.RawMessage   `json:"input"`
		Content    []json.RawMessage `json:"content"`
		Structured json.RawMessage   `json:"structured"`
		Error      *ocV2Error        `json:"error"`
	} `json:"state"`
	Time struct {
		Created   int64 `json:"created"`
		Ran       int64 `json:"ran"`
		Completed int64 `json:"completed"`
	} `json:"time"`
}

// ocV2Rows reads a session's session_message rows in seq order, each
// bounded as the first schema's rows are, and sets the session's content
// hash from them when there are any.
func ocV2Rows(ctx context.Context, db *sql.DB, s *ocSession) ([]ocRow, error) {
	rows, err := db.QueryContext(ctx, `SELECT id, type, seq, time_created, length(data), CASE WHEN length(data) <= ? THEN data END
		FROM session_message WHERE session_id = ? ORDER BY seq, id`, ocMaxRowBytes, s.ID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ocRow
	h := sha256.New()
	for rows.Next() {
		var r ocRow
		var n int64
		var data sql.NullString
		if err := rows.Scan(&r.id, &r.typ, &r.seq, &r.created, &n, &data); err != nil {
			return nil, err
		}
		if !data.Valid {
			return nil, fmt.Errorf("session_message %s: %d bytes of data, over the %d this import reads", r.id, n, ocMaxRowBytes)
		}
		r.raw = json.RawMessage(data.String)
		fmt.Fprintf(h, "session_message\x00%s\x00%s\x00%d\x00%s\x00", r.id, r.typ, r.seq, data.String)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) > 0 {
		s.rows = h.Sum(nil)
	}
	return out, nil
}

// ocV2Import maps one session of the v2 schema to the events the first
// schema's import writes: each assistant row an assistant_message and a
// model_call (its tokens, opencode's cost beside agentctl's), each tool
// item a tool_intent when it was called and a tool_result when it
// completed or failed. Messages the model did not write (synthetic and
// system context, agent and model switches) are kept verbatim in the
// attrs of the next message written; a shell command the user ran is a
// tool_intent and tool_result of tool "shell". v1 is how many rows the
// session also holds in the first schema's tables: not imported, and
// said so.
func ocV2Import(file string, s *ocSession, rows []ocRow, v1 int) *Session {
	b := ocHeader(file, s, "the session's session_message rows")
	// The v2 runner keeps cost and tokens per message and leaves the
	// session row's at 0 (1.18): each model_call carries the source's
	// cost instead.
	delete(b.attrs, "source_cost_usd")
	if v1 > 0 {
		b.note(0, CodeNotImported, "the session also has %d message rows of opencode's first schema; only its session_message rows were imported", v1)
	}
	x := &ocV2{b: b, pending: map[string]any{}}
	status := ""
	for i, r := range rows {
		rec := i + 1
		var m ocV2Message
		if err := json.Unmarshal(r.raw, &m); err != nil {
			b.note(rec, CodeBadLine, "session_message %s: data is not a message (%v); skipped", r.id, err)
			continue
		}
		switch r.typ {
		case "user":
			x.user(r, m)
		case "assistant":
			x.assistant(rec, r, m)
			status = m.Finish
			if m.Error != nil {
				status = "error"
				b.attrs["source_error"] = m.Error
			}
		case "shell":
			x.shell(rec, m)
		case "compaction":
			b.add(session.Event{Kind: session.KindCompaction, TS: msTime(m.Time.Created), Through: b.lastSeq(), Summary: m.Summary,
				Attrs: marshalAttrs(map[string]any{"reason": m.Reason})})
		case "synthetic", "system", "agent-switched", "model-switched":
			keepVerbatim(x.pending, r.typ, r.raw)
			b.note(rec, CodeKeptInAttrs, "session_message %s (%s) kept in the attrs of the next message", r.id, r.typ)
		default:
			b.note(rec, CodeUnknownRecord, "session_message %s: type %q is not one this importer knows; skipped", r.id, r.typ)
		}
	}
	if len(x.pending) > 0 {
		// Context after the last message: the header keeps it.
		for k, v := range x.pending {
			b.attrs[k] = v
		}
	}
	b.records = len(rows)
	b.endState(status)
	return b.finish(s.ID)
}

// ocV2 is the state of one v2 session's import.
type ocV2 struct {
	b *builder
	// pending holds rows kept verbatim, by type, for the next message's
	// attrs.
	pending map[string]any
}

// take merges the pending rows into attrs.
func (x *ocV2) take(attrs map[string]any) map[string]any {
	for k, v := range x.pending {
		attrs[k] = v
	}
	clear(x.pending)
	return attrs
}

func (x *ocV2) user(r ocRow, m ocV2Message) {
	attrs := map[string]any{}
	for k, v := range map[string]json.RawMessage{"files": m.Files, "agents": m.Agents} {
		if len(v) > 0 && string(v) != "null" && string(v) != "[]" {
			attrs[k] = v
		}
	}
	x.b.add(session.Event{Kind: session.KindUserMessage, TS: msTime(m.Time.Created), Text: m.Text, Attrs: marshalAttrs(x.take(attrs))})
}

// assistant writes one step: its response, then its tools' intents and
// results. The response came before its first call was made, and when
// the step completed if it made none.
func (x *ocV2) assistant(rec int, r ocRow, m ocV2Message) {
	t := turn{ts: msTime(m.Time.Completed), provider: m.Model.ProviderID, model: m.Model.ID, finish: m.Finish,
		attrs: x.take(map[string]any{}), callAttrs: map[string]any{"source_message_id": r.id}}
	if t.ts.IsZero() {
		t.ts = msTime(m.Time.Created)
	}
	if m.Agent != "" {
		t.callAttrs["agent"] = m.Agent
	}
	if m.Model.Variant != "" && m.Model.Variant != "default" {
		t.callAttrs["variant"] = m.Model.Variant
	}
	if len(m.Snapshot) > 0 && string(m.Snapshot) != "null" {
		t.attrs["snapshot"] = m.Snapshot
	}
	if m.Tokens != nil {
		t.usage = m.Tokens.bill()
		if m.Tokens.Reasoning > 0 {
			t.callAttrs["reasoning_tokens"] = m.Tokens.Reasoning
		}
	}
	t.sourceCost = m.Cost
	if m.Error != nil {
		t.callAttrs["error"] = m.Error
	}
	var tools []ocV2Item
	for _, raw := range m.Content {
		var it ocV2Item
		if err := json.Unmarshal(raw, &it); err != nil {
			x.b.note(rec, CodeBadLine, "session_message %s: a content item is not one (%v); skipped", r.id, err)
			continue
		}
		switch it.Type {
		case "text":
			t.appendText(it.Text)
		case "reasoning":
			keepVerbatim(t.attrs, "reasoning", raw)
		case "tool":
			t.calls = append(t.calls, session.ToolCall{ID: it.ID, Name: it.Name, Args: argsObject(it.State.Input)})
			tools = append(tools, it)
			if c := msTime(it.Time.Created); !c.IsZero() && c.Before(t.ts) {
				t.ts = c
			}
		default:
			x.b.note(rec, CodeUnknownRecord, "session_message %s: content item type %q is not one this importer knows; skipped", r.id, it.Type)
		}
	}
	x.b.addTurn(t, rec)
	for _, it := range tools {
		start, end := msTime(it.Time.Created), msTime(it.Time.Completed)
		x.b.intent(session.ToolCall{ID: it.ID, Name: it.Name, Args: argsObject(it.State.Input)}, start)
		var attrs map[string]any
		if s := it.State.Structured; len(s) > 0 && string(s) != "null" && string(s) != "{}" {
			attrs = map[string]any{"structured": s}
		}
		switch it.State.Status {
		case "completed":
			x.b.result(rec, it.ID, ocV2Text(it.State.Content), session.ResultOK, "", end, end.Sub(start).Milliseconds(), attrs)
		case "error":
			msg := ""
			if it.State.Error != nil {
				msg = it.State.Error.Message
			}
			x.b.result(rec, it.ID, ocV2Text(it.State.Content), session.ResultError, msg, end, end.Sub(start).Milliseconds(), attrs)
		}
		// pending or running: the call has no result (noted at finish).
	}
}

// shell writes a command the user ran (opencode's "!" prompt): no model
// asked for it, so it is a call and its result without a response.
func (x *ocV2) shell(rec int, m ocV2Message) {
	start, end := msTime(m.Time.Created), msTime(m.Time.Completed)
	args, _ := json.Marshal(map[string]string{"command": m.Command})
	x.b.calls[m.CallID] = &callInfo{tool: "shell", line: rec}
	x.b.callList = append(x.b.callList, m.CallID)
	x.b.add(session.Event{Kind: session.KindToolIntent, TS: start, CallID: m.CallID, Tool: "shell", Args: args,
		Attrs: marshalAttrs(x.take(map[string]any{"run_by": "user"}))})
	if end.IsZero() {
		return // still running when the database was read: no result
	}
	x.b.result(rec, m.CallID, m.Output, session.ResultOK, "", end, end.Sub(start).Milliseconds(), nil)
}

// ocV2Text is a tool's output: the texts of its content, a line each.
func ocV2Text(content []json.RawMessage) string {
	var parts []string
	for _, raw := range content {
		var c struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &c) == nil && c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}
