package query

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// Statuses are the statuses a session can have in the sessions view: those
// a session_finished records and those a reader derives (running, crashed,
// imported, corrupt).
var Statuses = []session.Status{
	session.StatusDone, session.StatusFailed, session.StatusAwaitingApproval, session.StatusBudgetExceeded,
	session.StatusNeedsHuman, session.StatusInterrupted, session.StatusRunning, session.StatusCrashed,
	session.StatusImported, session.StatusCorrupt,
}

// Filter narrows Sessions to the sessions matching every field that is
// set. It is applied in SQL over the sessions view, so the list, the UI
// and a user's query select the same sessions by the same columns.
type Filter struct {
	// Status: any of these statuses.
	Status []session.Status
	// Since: started at or after.
	Since time.Time
	// Tags: each of these tags, with this value (tags['k'] = 'v').
	Tags map[string]string
	// User: this user_id.
	User string
	// Parent: the subagents and forks of this session (parent_session_id).
	Parent string
	// Model, Origin, Agent: this model, origin (run, proxy, collect,
	// import) and agent (the session's name: its spec's), exactly.
	Model, Origin, Agent string
	// Text: a user or assistant message contains it, case aside
	// (MessageTextSQL).
	Text string
	// Limit: at most this many, the most recently started; 0 is all.
	Limit int
}

// empty reports whether f selects every session.
func (f Filter) empty() bool {
	return len(f.Status) == 0 && f.Since.IsZero() && len(f.Tags) == 0 && f.User == "" && f.Parent == "" && f.Limit == 0 &&
		f.Model == "" && f.Origin == "" && f.Agent == "" && f.Text == ""
}

// where is f as an SQL condition over the sessions view and its arguments.
func (f Filter) where() (string, []any) {
	conds, args := []string{"true"}, []any{}
	if len(f.Status) > 0 {
		ph := make([]string, len(f.Status))
		for i, s := range f.Status {
			ph[i], args = "?", append(args, string(s))
		}
		conds = append(conds, "status IN ("+strings.Join(ph, ", ")+")")
	}
	if !f.Since.IsZero() {
		conds, args = append(conds, "started >= ?"), append(args, f.Since)
	}
	for _, k := range slices.Sorted(maps.Keys(f.Tags)) {
		conds, args = append(conds, "tags[?] = ?"), append(args, k, f.Tags[k])
	}
	if f.User != "" {
		conds, args = append(conds, "user_id = ?"), append(args, f.User)
	}
	if f.Parent != "" {
		conds, args = append(conds, "parent_session_id = ?"), append(args, f.Parent)
	}
	for _, c := range []struct{ col, v string }{{"model", f.Model}, {"origin", f.Origin}, {"name", f.Agent}} {
		if c.v != "" {
			conds, args = append(conds, c.col+" = ?"), append(args, c.v)
		}
	}
	if f.Text != "" {
		conds = append(conds, "session_id IN (SELECT session_id FROM ("+MessageTextSQL+") WHERE contains(text, lower(?)))")
		args = append(args, f.Text)
	}
	return strings.Join(conds, " AND "), args
}

// MessageTextSQL is what a search in a session's messages reads: each user
// and assistant message, lowercased, by session (the runs page's text
// filter, list_sessions' and `sessions --text`).
const MessageTextSQL = `SELECT session_id, lower(text) AS text FROM events WHERE kind IN ('user_message', 'assistant_message') AND text <> ''`

// Session is a row of the sessions view as Sessions lists it: the
// summary every session has (what the fold of its log gives too) and the
// columns the view adds for a list of runs. Its JSON form is the --json
// output of agentctl sessions, and only grows.
type Session struct {
	recorder.Summary
	Tokens       int64             `json:"tokens"`
	Turns        int64             `json:"turns"`
	DurationMS   *int64            `json:"duration_ms"`
	Origin       string            `json:"origin,omitempty"`
	Reason       string            `json:"reason,omitempty"`
	FinishReason string            `json:"finish_reason,omitempty"`
	Tags         map[string]string `json:"tags,omitempty"`
	UserID       string            `json:"user_id,omitempty"`
	// NotRecorded is what an import's source does not record (the view's
	// not_recorded): with "usage", Tokens and CostUSD are unknown, not 0.
	NotRecorded []string `json:"not_recorded,omitempty"`
}

// Records reports whether the session's source records what (a
// session.NotRecorded name), as session.State.Records does for a fold.
func (s Session) Records(what string) bool { return !slices.Contains(s.NotRecorded, what) }

// Sessions returns one summary per session from the sessions view (sealed
// history and live logs alike) that f selects, most recently started
// first, the order of recorder.Store.List. Sessions read from their logs
// carry what reading found (a torn tail, an error); a log with no readable
// event is listed too when f selects every session or names its status
// (it has no start, no tags and no user to match).
func (d *DB) Sessions(ctx context.Context, f Filter) ([]Session, error) {
	var out []Session
	err := d.retry(ctx, func() error {
		if err := d.ensureDerived(ctx, "sessions"); err != nil {
			return err
		}
		var err error
		out, err = d.sessions(ctx, f)
		return err
	})
	return out, err
}

func (d *DB) sessions(ctx context.Context, f Filter) ([]Session, error) {
	where, args := f.where()
	q := `SELECT session_id, name, provider, model, status, started, ended,
		events, input_tokens, output_tokens, cost_usd, tool_calls, errors, parent_session_id,
		origin, turns, reason, finish_reason, to_json(tags)::VARCHAR, user_id, duration_ms, to_json(not_recorded)::VARCHAR
		FROM sessions WHERE ` + where + ` ORDER BY started DESC NULLS LAST, session_id`
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := d.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		var s Session
		var name, prov, model, status, parent, origin, reason, finish, tags, user, notRec sql.NullString
		var started, ended sql.NullTime
		var dur sql.NullInt64
		if err := rows.Scan(&s.SessionID, &name, &prov, &model, &status, &started, &ended,
			&s.Events, &s.InputTokens, &s.OutputTokens, &s.CostUSD, &s.ToolCalls, &s.Errors, &parent,
			&origin, &s.Turns, &reason, &finish, &tags, &user, &dur, &notRec); err != nil {
			return nil, err
		}
		s.Name, s.Provider, s.Model, s.Status = name.String, prov.String, model.String, session.Status(status.String)
		s.ParentSessionID = parent.String
		s.Started, s.Ended = localTime(started), localTime(ended)
		s.Tokens = s.InputTokens + s.OutputTokens
		s.Origin, s.Reason, s.FinishReason, s.UserID = origin.String, reason.String, finish.String, user.String
		if dur.Valid {
			s.DurationMS = &dur.Int64
		}
		if notRec.Valid && notRec.String != "[]" {
			if err := json.Unmarshal([]byte(notRec.String), &s.NotRecorded); err != nil {
				return nil, fmt.Errorf("session %s: not_recorded: %w", s.SessionID, err)
			}
		}
		if tags.Valid && tags.String != "{}" {
			if err := json.Unmarshal([]byte(tags.String), &s.Tags); err != nil {
				return nil, fmt.Errorf("session %s: tags: %w", s.SessionID, err)
			}
		}
		if ls, ok := d.logs[s.SessionID]; ok {
			s.Torn = ls.Torn
			if ls.Err != nil {
				s.Err = ls.Err.Error()
			}
		} else if e, ok := d.m.Sessions[s.SessionID]; ok {
			s.Torn = e.Torn // sealed with a torn tail: the log still has it
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for id, ls := range d.logs {
		if ls.Events > 0 {
			continue
		}
		// No readable event, so no row: the fold of nothing says the
		// same as the view would. With no start, tags or user, only a
		// filter by status alone can select it.
		st := session.NewState()
		st.Live = recorder.Live(d.hist.Store.SessionDir(id))
		s := Session{Summary: recorder.SummaryOf(id, st, recorder.Tail{Torn: ls.Torn}, ls.Err)}
		nf := f
		nf.Status, nf.Limit = nil, 0
		if nf.empty() && (len(f.Status) == 0 || slices.Contains(f.Status, s.Status)) {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.After(out[j].Started)
		}
		return out[i].SessionID < out[j].SessionID
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

func localTime(t sql.NullTime) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time
}
