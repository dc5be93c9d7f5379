package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// ref is a resolved session: its id, and whether only the sealed history
// holds it (its log folder is gone: pruned, or a CI runner pushed the
// history and cleaned up; or it is only in --remote's history).
type ref struct {
	id     string
	sealed bool
}

// resolve finds the session name names as the CLI does (an id, a unique
// prefix, latest) among the home's logs, and else among the sessions the
// history sealed, the home's (its manifest) and the remote's. A name that
// matches neither gets the CLI's error, with its hint.
func (s *server) resolve(name string) (ref, error) {
	id, err := s.opts.Store.Resolve(name)
	if err == nil || !errors.Is(err, recorder.ErrNoSession) || name == recorder.Latest || name == "" {
		return ref{id: id}, err
	}
	ids, herr := s.sealedIDs()
	if herr != nil {
		return ref{}, errors.Join(err, herr)
	}
	var matches []string
	for _, sid := range ids {
		if sid == name {
			return ref{id: sid, sealed: true}, nil
		}
		if strings.HasPrefix(sid, name) {
			matches = append(matches, sid)
		}
	}
	switch len(matches) {
	case 0:
		return ref{}, err
	case 1:
		return ref{id: matches[0], sealed: true}, nil
	}
	slices.Sort(matches)
	return ref{}, fmt.Errorf("%w %q matches %d sealed sessions: %s; give more of the id", recorder.ErrAmbiguous, name, len(matches), strings.Join(matches, ", "))
}

// sealedIDs are the sessions the history holds: the home's manifest's and
// the remote parts'. Reading them costs the manifest, not a query.
func (s *server) sealedIDs() ([]string, error) {
	m, err := history.New(s.opts.Store.Root).Manifest()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var ids []string
	for id := range m.Sessions {
		seen[id] = true
		ids = append(ids, id)
	}
	for _, p := range s.opts.Remote {
		for _, id := range p.Sessions {
			if !p.Eval && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	return ids, nil
}

// eachEvent hands fn the events of r with seq >= from, in seq order, until
// fn returns false or they end: from the log (seeking through the log
// index), or from the history's events view when only the history has the
// session. A log's read error comes back as the recorder gives it (its
// torn tail: recorder.ErrTornTail), after fn had the events before it.
func (s *server) eachEvent(ctx context.Context, r ref, from int64, fn func(session.Event) bool) error {
	if r.sealed {
		return s.eachSealedEvent(ctx, r.id, from, fn)
	}
	return s.eachLogEvent(r.id, from, fn)
}

// sealedBatch is how many seqs one query of the history reads: the rows
// one query holds, whatever the session's length.
const sealedBatch = 256

// eachSealedEvent is eachEvent from the events view, sealedBatch seqs a
// query (a range of seq, which DuckDB filters as it scans), each row made
// back into its event by history.Row.Event, the one inverse of sealing.
// The seqs must follow on from from: a gap is a damaged history, an error.
func (s *server) eachSealedEvent(ctx context.Context, id string, from int64, fn func(session.Event) bool) error {
	db, done, err := s.openDB(ctx)
	if err != nil {
		return err
	}
	defer done()
	from = max(from, 1)
	for {
		q := fmt.Sprintf("SELECT * FROM events WHERE session_id = %s AND seq >= %d AND seq < %d ORDER BY seq", sqlString(id), from, from+sealedBatch)
		res, err := db.Query(ctx, q)
		if err != nil {
			return fmt.Errorf("read its events from the history: %w", err)
		}
		for _, vals := range res.Rows {
			e, err := eventOf(res.Columns, vals)
			if err != nil {
				return err
			}
			if e.Seq != from {
				return fmt.Errorf("the history holds seq %d where %d was expected: it is damaged; 'agentctl query' shows what it holds", e.Seq, from)
			}
			from++
			if !fn(e) {
				return nil
			}
		}
		if len(res.Rows) < sealedBatch {
			return nil
		}
	}
}

// sqlString quotes s as an SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// rowColumns maps an events column to its field of history.Row (the
// field's parquet name).
var rowColumns = sync.OnceValue(func() map[string]int {
	t := reflect.TypeFor[history.Row]()
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("parquet"), ",")
		m[name] = i
	}
	return m
})

// eventOf is the event a row of the events view holds: the row as the
// history.Row it was sealed from, then Row.Event. Columns the Row does not
// have are ignored, NULL is the zero value.
func eventOf(cols []string, vals []any) (session.Event, error) {
	var r history.Row
	rv := reflect.ValueOf(&r).Elem()
	for i, c := range cols {
		fi, ok := rowColumns()[c]
		if !ok || vals[i] == nil {
			continue
		}
		f, v := rv.Field(fi), reflect.ValueOf(vals[i])
		switch {
		case v.Type().AssignableTo(f.Type()):
			f.Set(v)
		case numeric(v.Kind()) && numeric(f.Kind()):
			f.Set(v.Convert(f.Type()))
		default:
			return session.Event{}, fmt.Errorf("history: column %s is a %T, not a %s", c, vals[i], f.Type())
		}
	}
	return r.Event()
}

func numeric(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Float64
}
