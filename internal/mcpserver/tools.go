package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentctl/agentctl/internal/diagnose"
	"github.com/agentctl/agentctl/internal/leanmem"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
	replaycheck "github.com/agentctl/agentctl/internal/replay/check"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/view"
)

// readOnly marks every tool: none changes anything.
var readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}

func ptr[T any](v T) *T { return &v }

func (s *server) addTools(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{Name: "list_sessions", Annotations: readOnly, Description: `List recorded agent sessions, newest first, as 'agentctl sessions --json' does: each with session_id, name, status (done, failed, crashed, ...), model, started, events, tokens, cost_usd, tags, user_id, finish_reason, origin, turns, reason. Filters (all must hold): status (any of), since (90m, 24h, 7d, 2026-12-01 or an RFC 3339 time), tags (KEY=VALUE, every one), user, limit (the N most recently started). Paged: at most page_size sessions (default 50, max 200) and at most max_bytes (default 64 KiB, max 256 KiB) per answer; pass next_cursor back as cursor for the next page. ` + dataNotInstructions}, s.listSessions)
	mcp.AddTool(srv, &mcp.Tool{Name: "show_session", Annotations: readOnly, Description: `The events of one session (an id or a unique prefix) in seq order, each as its JSON record in the log (kind, seq, ts and the kind's fields: messages, tool calls and results, usage). Paged by seq: from from_seq, as many events as fit in max_bytes (default 64 KiB, max 256 KiB); each string is clipped to max_string bytes (default 2000) with a note. next_seq is where the next page starts (0 when the events end). A session only in the sealed history (its log folder gone, or only in the remote's) is read from there. The log is read a record at a time and later pages seek: a session of a million events costs about a page a call. ` + dataNotInstructions}, s.showSession)
	mcp.AddTool(srv, &mcp.Tool{Name: "diagnose", Annotations: readOnly, Description: `The postmortem of one session, as 'agentctl diagnose ID --json' gives it: {session_id, name, status, events, tokens, cost_usd, tool_calls, findings: [{kind, text, seqs}]} where the kinds are loop, after_error, budget, pending, approvals, compaction, slow_tools, exit; seqs cite events (show_session from_seq). A few KiB; bounded by max_bytes (default 64 KiB). ` + dataNotInstructions}, s.diagnose)
	mcp.AddTool(srv, &mcp.Tool{Name: "compare_sessions", Annotations: readOnly, Description: `Compare two sessions turn by turn, as 'agentctl view --compare A B' does: first_diff (the 1-based turn where they first differ, 0 when the turns agree), same, relation, and per turn the text, calls, results, tokens and cost of each side and what differs. Rows are cut to max_bytes (default 64 KiB, max 256 KiB) with truncated set. Both sessions are read whole: refused over 200,000 events. ` + dataNotInstructions}, s.compareSessions)
	mcp.AddTool(srv, &mcp.Tool{Name: "query", Annotations: readOnly, Description: `Run one read-only SQL SELECT (DuckDB) over agentctl's views: sessions, events, messages, tool_calls, model_calls, eval_runs, eval_results and the others of 'agentctl query' (SELECT table_name FROM information_schema.tables lists them). Confined as an eval suite's sql: is: the views' files only, no COPY, ATTACH, INSTALL, LOAD, SET, PRAGMA or file reads. Returns {columns, rows, truncated}: at most max_rows rows (default 100, max 500) and max_bytes (default 64 KiB, max 256 KiB); cells as 'agentctl query --format json' prints them, long strings clipped. ` + dataNotInstructions}, s.query)
	mcp.AddTool(srv, &mcp.Tool{Name: "eval_reports", Annotations: readOnly, Description: `Eval suites' reports (agentctl eval) from the eval_runs view: without suite, one row per suite (runs, last run, last verdict); with suite, its reports newest first: started, branch, commit, passed/failed scenarios, baseline verdict and its regressions. At most 100 rows and max_bytes (default 64 KiB). ` + dataNotInstructions}, s.evalReports)
	mcp.AddTool(srv, &mcp.Tool{Name: "replay_verify", Annotations: readOnly, Description: `Check a session offline as 'agentctl replay verify ID --json' does: re-project every turn and compare with the recorded request digests (nothing is re-executed, no model or tool is called). Returns the report: status (ok, structure_only, diverged, broken, error), events, model_calls, checked, and the first divergence (turn, seq, code, which field differs). Bounded by max_bytes (default 64 KiB). ` + dataNotInstructions}, s.replayVerify)
}

type listIn struct {
	Status   []string `json:"status,omitempty" jsonschema:"any of these statuses: done, failed, awaiting_approval, budget_exceeded, needs_human, interrupted, running, crashed, imported, corrupt"`
	Since    string   `json:"since,omitempty" jsonschema:"started at or after: a duration back from now (90m, 24h, 7d), a date (2026-12-01) or an RFC 3339 time"`
	Tags     []string `json:"tags,omitempty" jsonschema:"tags the session must carry, each as KEY=VALUE, every one"`
	User     string   `json:"user,omitempty" jsonschema:"the user_id the session ran for"`
	Model    string   `json:"model,omitempty" jsonschema:"this model, exactly (as the sessions' model column names it)"`
	Origin   string   `json:"origin,omitempty" jsonschema:"how it was recorded: run, proxy, collect or import"`
	Agent    string   `json:"agent,omitempty" jsonschema:"this agent: the session's name (its spec's), exactly"`
	Text     string   `json:"text,omitempty" jsonschema:"a user or assistant message contains this text (case aside); reads every message, so slower on a long history"`
	Limit    int      `json:"limit,omitempty" jsonschema:"at most this many sessions, the most recently started (0: all)"`
	PageSize int      `json:"page_size,omitempty" jsonschema:"sessions per answer (default 50, max 200)"`
	Cursor   string   `json:"cursor,omitempty" jsonschema:"next_cursor of the previous answer"`
	MaxBytes int      `json:"max_bytes,omitempty" jsonschema:"byte budget of the answer (default 65536, max 262144)"`
}

func (s *server) listSessions(ctx context.Context, _ *mcp.CallToolRequest, in listIn) (*mcp.CallToolResult, any, error) {
	var flt query.Filter
	for _, st := range in.Status {
		if !slices.Contains(query.Statuses, session.Status(st)) {
			names := make([]string, len(query.Statuses))
			for i, x := range query.Statuses {
				names[i] = string(x)
			}
			return nil, nil, fmt.Errorf("status %q is not a status: use one of %s", st, strings.Join(names, ", "))
		}
		flt.Status = append(flt.Status, session.Status(st))
	}
	if in.Since != "" {
		t, err := query.ParseSince(in.Since, time.Now())
		if err != nil {
			return nil, nil, errors.New(strings.Replace(err.Error(), "--since", "since", 1))
		}
		flt.Since = t
	}
	tags, err := session.ParseTags(in.Tags)
	if err != nil {
		return nil, nil, fmt.Errorf("tags: %w", err)
	}
	flt.Tags, flt.User, flt.Model, flt.Origin, flt.Agent, flt.Text = tags, in.User, in.Model, in.Origin, in.Agent, in.Text
	off := 0
	if in.Cursor != "" {
		if off, err = strconv.Atoi(in.Cursor); err != nil || off < 0 {
			return nil, nil, fmt.Errorf("cursor %q is not one this server gave: pass next_cursor back as it came", in.Cursor)
		}
	}
	page := in.PageSize
	if page <= 0 {
		page = 50
	}
	page = min(page, 200)
	// The N most recent are the first N of the list: asking for the page
	// and one more bounds what the view returns however long the history.
	flt.Limit = off + page + 1
	if in.Limit > 0 {
		flt.Limit = min(flt.Limit, in.Limit)
	}
	db, done, err := s.openDB(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer done()
	list, err := db.Sessions(ctx, flt)
	if err != nil {
		return nil, nil, err
	}
	max := budget(in.MaxBytes)
	out := struct {
		Sessions   []json.RawMessage `json:"sessions"`
		NextCursor string            `json:"next_cursor,omitempty"`
		Note       string            `json:"note,omitempty"`
	}{Sessions: []json.RawMessage{}}
	used := 200
	i := off
	for ; i < len(list) && i < off+page; i++ {
		b, err := json.Marshal(list[i])
		if err != nil {
			return nil, nil, err
		}
		item, err := inertJSON(b, DefaultMaxString)
		if err != nil {
			return nil, nil, err
		}
		if used+len(item)+1 > max && len(out.Sessions) > 0 {
			out.Note = "the page stopped at max_bytes"
			break
		}
		used += len(item) + 1
		out.Sessions = append(out.Sessions, item)
	}
	if i < len(list) {
		out.NextCursor = strconv.Itoa(i)
	}
	res, err := answer(out)
	return res, nil, err
}

type showIn struct {
	Session   string `json:"session" jsonschema:"the session id, or a unique prefix of it"`
	FromSeq   int64  `json:"from_seq,omitempty" jsonschema:"the first seq to return (default: the first event)"`
	MaxBytes  int    `json:"max_bytes,omitempty" jsonschema:"byte budget of the answer (default 65536, max 262144)"`
	MaxString int    `json:"max_string,omitempty" jsonschema:"bytes of one string before it is clipped (default 2000)"`
}

// page is one answer of show_session.
type page struct {
	SessionID string            `json:"session_id"`
	Events    []json.RawMessage `json:"events"`
	NextSeq   int64             `json:"next_seq"`
	Note      string            `json:"note,omitempty"`
}

// readPage reads session r's events from seq from and stops at the byte
// budget, so a page costs its events (and, the first time, the log before
// them: see logindex.go) whatever the length of the session.
func (s *server) readPage(ctx context.Context, r ref, from int64, max, maxString int) (*page, error) {
	p := &page{SessionID: r.id, Events: []json.RawMessage{}}
	used := 200
	var ferr error
	err := s.eachEvent(ctx, r, from, func(e session.Event) bool {
		b, err := session.Encode(e)
		if err != nil {
			ferr = err
			return false
		}
		item, err := inertJSON(b, maxString)
		if err != nil {
			ferr = err
			return false
		}
		if used+len(item)+1 > max {
			if len(p.Events) == 0 {
				// One event larger than the whole budget even clipped:
				// say so rather than send nothing forever.
				item, _ = json.Marshal(map[string]any{"seq": e.Seq, "kind": e.Kind, "clipped": fmt.Sprintf("this event is %d bytes with its strings clipped, more than max_bytes %d: ask with a smaller max_string", len(item), max)})
				p.Events = append(p.Events, item)
				p.NextSeq = e.Seq + 1
				return false
			}
			p.NextSeq = e.Seq
			p.Note = "the page stopped at max_bytes: call again with from_seq = next_seq"
			return false
		}
		used += len(item) + 1
		p.Events = append(p.Events, item)
		return true
	})
	switch {
	case ferr != nil:
		return nil, ferr
	case err == nil:
	case errors.Is(err, recorder.ErrTornTail):
		// a torn tail ends the log cleanly for a reader
		p.Note = "the log ends in a torn tail (a crash mid-write); 'agentctl resume' cuts it"
	case len(p.Events) > 0:
		p.Note = fmt.Sprintf("reading stopped: %v", err)
	default:
		return nil, fmt.Errorf("session %s: %w", r.id, err)
	}
	return p, nil
}

func (s *server) showSession(ctx context.Context, _ *mcp.CallToolRequest, in showIn) (*mcp.CallToolResult, any, error) {
	r, err := s.resolve(in.Session)
	if err != nil {
		return nil, nil, err
	}
	ms := in.MaxString
	if ms <= 0 {
		ms = DefaultMaxString
	}
	p, err := s.readPage(ctx, r, in.FromSeq, budget(in.MaxBytes), min(ms, MaxBudget))
	if err != nil {
		return nil, nil, err
	}
	res, err := answer(p)
	return res, nil, err
}

type sessionIn struct {
	Session  string `json:"session" jsonschema:"the session id, or a unique prefix of it"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"byte budget of the answer (default 65536, max 262144)"`
}

// diagnoseReport is session name's report, as `agentctl diagnose ID
// --json` prints it: diagnose.Stream of its log, or for a session only the
// history holds the same fold fed its sealed events (never live).
func (s *server) diagnoseReport(ctx context.Context, name string) (*diagnose.Report, error) {
	r, err := s.resolve(name)
	if err != nil {
		return nil, err
	}
	restore := leanmem.Set()
	defer restore()
	if !r.sealed {
		rep, _, err := diagnose.Stream(s.opts.Store, r.id)
		if err != nil && rep == nil {
			return nil, err
		}
		return rep, nil
	}
	f := diagnose.NewFold(r.id)
	a := replaycheck.NewAnchorer(r.id, nil)
	if err := s.eachEvent(ctx, r, 1, func(e session.Event) bool {
		a.Add(e)
		f.Add(e)
		return true
	}); err != nil {
		return nil, fmt.Errorf("session %s: %w", r.id, err)
	}
	return f.Report(false, false, a.Report())
}

func (s *server) diagnose(ctx context.Context, _ *mcp.CallToolRequest, in sessionIn) (*mcp.CallToolResult, any, error) {
	rep, err := s.diagnoseReport(ctx, in.Session)
	if err != nil {
		return nil, nil, err
	}
	return bounded(rep, budget(in.MaxBytes))
}

// bounded answers v, or says it is over the budget.
func bounded(v any, max int) (*mcp.CallToolResult, any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, nil, err
	}
	item, err := inertJSON(b, DefaultMaxString)
	if err != nil {
		return nil, nil, err
	}
	if len(item) > max {
		return nil, nil, fmt.Errorf("the answer is %d bytes, more than max_bytes %d: raise max_bytes (up to %d)", len(item), max, MaxBudget)
	}
	res, err := answer(item)
	return res, nil, err
}

type compareIn struct {
	A        string `json:"a" jsonschema:"the first session id (or a unique prefix)"`
	B        string `json:"b" jsonschema:"the second session id (or a unique prefix)"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"byte budget of the answer (default 65536, max 262144)"`
}

// maxCompareEvents bounds a side of compare_sessions, which reads both
// sessions whole as view --compare does.
const maxCompareEvents = 200000

func (s *server) compareSessions(ctx context.Context, _ *mcp.CallToolRequest, in compareIn) (*mcp.CallToolResult, any, error) {
	var sides [2]view.Input
	for i, name := range []string{in.A, in.B} {
		r, err := s.resolve(name)
		if err != nil {
			return nil, nil, err
		}
		var evs []session.Event
		err = s.eachEvent(ctx, r, 1, func(e session.Event) bool {
			evs = append(evs, e)
			return len(evs) <= maxCompareEvents
		})
		if len(evs) > maxCompareEvents {
			return nil, nil, fmt.Errorf("session %s has more than the %d events compare_sessions reads whole: use 'agentctl view --compare' at your prompt", r.id, maxCompareEvents)
		}
		if err != nil && len(evs) == 0 {
			return nil, nil, fmt.Errorf("session %s: %w", r.id, err)
		}
		sides[i] = view.Input{ID: r.id, Events: evs, MaxText: 500}
	}
	c, err := view.CompareSessions(sides[0], sides[1])
	if err != nil {
		return nil, nil, err
	}
	max := budget(in.MaxBytes)
	out := struct {
		*view.Compare
		Truncated bool `json:"truncated,omitempty"`
	}{Compare: c}
	for {
		b, err := json.Marshal(out)
		if err != nil {
			return nil, nil, err
		}
		if len(b) <= max || len(out.Rows) == 0 {
			break
		}
		// Keep the first difference in view: drop rows from the end.
		out.Rows, out.Truncated = out.Rows[:len(out.Rows)*3/4], true
	}
	return bounded(out, max)
}

type queryIn struct {
	SQL      string `json:"sql" jsonschema:"one SELECT over the views"`
	MaxRows  int    `json:"max_rows,omitempty" jsonschema:"rows to return (default 100, max 500)"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"byte budget of the answer (default 65536, max 262144)"`
}

// queryTimeout stops a query that runs away.
const queryTimeout = 30 * time.Second

func (s *server) query(ctx context.Context, _ *mcp.CallToolRequest, in queryIn) (*mcp.CallToolResult, any, error) {
	if len(in.SQL) > maxSQL {
		return nil, nil, fmt.Errorf("the query is %d bytes, more than the %d the tool takes", len(in.SQL), maxSQL)
	}
	rows := in.MaxRows
	if rows <= 0 {
		rows = 100
	}
	rows = min(rows, MaxRows)
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	// A database of its own: the confinement cannot be undone on it.
	db, done, err := s.openDB(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer done()
	res, err := db.UserSQL(ctx, in.SQL, rows, "the query tool")
	if ctx.Err() == context.DeadlineExceeded {
		return nil, nil, fmt.Errorf("the query ran longer than %s and was stopped", queryTimeout)
	}
	if err != nil {
		return nil, nil, err
	}
	return tableAnswer(res, rows, budget(in.MaxBytes))
}

// tableAnswer is res as {columns, rows, truncated}, its cells as `agentctl
// query --format json` prints them, cut at rows and max bytes.
func tableAnswer(res *query.Result, rows, max int) (*mcp.CallToolResult, any, error) {
	truncated := len(res.Rows) > rows
	if truncated {
		res.Rows = res.Rows[:rows]
	}
	var buf bytes.Buffer
	if err := query.Write(&buf, res, "json"); err != nil {
		return nil, nil, err
	}
	var objs []json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &objs); err != nil {
		return nil, nil, fmt.Errorf("query: read the rows back: %w", err)
	}
	out := struct {
		Columns   []string          `json:"columns"`
		Rows      []json.RawMessage `json:"rows"`
		Truncated bool              `json:"truncated"`
		Note      string            `json:"note,omitempty"`
	}{Columns: res.Columns, Rows: []json.RawMessage{}, Truncated: truncated}
	used := 200
	for _, c := range res.Columns {
		used += len(c) + 3
	}
	for _, o := range objs {
		item, err := inertJSON(o, DefaultMaxString)
		if err != nil {
			return nil, nil, err
		}
		if used+len(item)+1 > max {
			out.Truncated, out.Note = true, "the rows stopped at max_bytes"
			break
		}
		used += len(item) + 1
		out.Rows = append(out.Rows, item)
	}
	if out.Truncated && out.Note == "" {
		out.Note = fmt.Sprintf("more rows than max_rows %d: narrow the query or page it with LIMIT/OFFSET", rows)
	}
	r, err := answer(out)
	return r, nil, err
}

type evalIn struct {
	Suite    string `json:"suite,omitempty" jsonschema:"a suite's name: its reports; without, one row per suite"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"byte budget of the answer (default 65536, max 262144)"`
}

func (s *server) evalReports(ctx context.Context, _ *mcp.CallToolRequest, in evalIn) (*mcp.CallToolResult, any, error) {
	q := query.EvalSuitesSQL
	if in.Suite != "" {
		q = strings.ReplaceAll(query.EvalReportsSQL, "$SUITE", "'"+strings.ReplaceAll(in.Suite, "'", "''")+"'")
	}
	db, done, err := s.openDB(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer done()
	res, err := db.Query(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	return tableAnswer(res, 100, budget(in.MaxBytes))
}

type verifyIn = sessionIn

func (s *server) replayVerify(_ context.Context, _ *mcp.CallToolRequest, in verifyIn) (*mcp.CallToolResult, any, error) {
	r, err := s.resolve(in.Session)
	if err != nil {
		return nil, nil, err
	}
	if r.sealed {
		return nil, nil, fmt.Errorf("session %s is only in the sealed history (its log folder is gone): replay_verify checks a log; show_session and diagnose read the history", r.id)
	}
	rep := replaycheck.VerifyStore([]string{r.id}, s.opts.Store)[0]
	return bounded(rep, budget(in.MaxBytes))
}
