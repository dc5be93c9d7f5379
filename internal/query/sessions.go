package query

import (
	"context"
	"database/sql"
	"sort"
	"time"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// Sessions returns one summary per session from the sessions view (sealed
// history and live logs alike), most recently started first, the order of
// recorder.Store.List. Sessions read from their logs carry what reading
// found (a torn tail, an error); a log with no readable event is listed
// too.
func (d *DB) Sessions(ctx context.Context) ([]recorder.Summary, error) {
	var out []recorder.Summary
	err := d.retry(ctx, func() error {
		if err := d.ensureDerived(ctx, "sessions"); err != nil {
			return err
		}
		var err error
		out, err = d.sessions(ctx)
		return err
	})
	return out, err
}

func (d *DB) sessions(ctx context.Context) ([]recorder.Summary, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT session_id, name, provider, model, status, started, ended,
		events, input_tokens, output_tokens, cost_usd, tool_calls, errors, parent_session_id FROM sessions`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	seen := map[string]bool{}
	var out []recorder.Summary
	for rows.Next() {
		var s recorder.Summary
		var name, prov, model, status, parent sql.NullString
		var started, ended sql.NullTime
		if err := rows.Scan(&s.SessionID, &name, &prov, &model, &status, &started, &ended,
			&s.Events, &s.InputTokens, &s.OutputTokens, &s.CostUSD, &s.ToolCalls, &s.Errors, &parent); err != nil {
			return nil, err
		}
		s.Name, s.Provider, s.Model, s.Status = name.String, prov.String, model.String, session.Status(status.String)
		s.ParentSessionID = parent.String
		s.Started, s.Ended = localTime(started), localTime(ended)
		if ls, ok := d.logs[s.SessionID]; ok {
			s.Torn = ls.Torn
			if ls.Err != nil {
				s.Err = ls.Err.Error()
			}
		} else if e, ok := d.m.Sessions[s.SessionID]; ok {
			s.Torn = e.Torn // sealed with a torn tail: the log still has it
		}
		seen[s.SessionID] = true
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for id, ls := range d.logs {
		if !seen[id] {
			// No readable event, so no row: the fold of nothing says the
			// same as the view would.
			st := session.NewState()
			st.Live = recorder.Live(d.hist.Store.SessionDir(id))
			out = append(out, recorder.SummaryOf(id, st, recorder.Tail{Torn: ls.Torn}, ls.Err))
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.After(out[j].Started)
		}
		return out[i].SessionID < out[j].SessionID
	})
	return out, nil
}

func localTime(t sql.NullTime) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time
}
