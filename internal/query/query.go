package query

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/termsafe"
	"github.com/agentctl/agentctl/internal/vfs"
)

// Views lists the views every query can use, in the order they are
// documented.
var Views = []string{"events", "sessions", "tool_calls", "model_calls", "eval_runs", "eval_results"}

// LogState is what reading a session's log found, for a session read from
// its log rather than from the history.
type LogState struct {
	Torn bool
	Err  error
	// Events is how many events were read: a log with none has no row
	// in the views.
	Events int64
}

// DB is an in-memory DuckDB database whose views read an agentctl home's
// history. It is not safe for concurrent use.
type DB struct {
	home string
	hist *history.History
	warn io.Writer
	db   *sql.DB
	tmp  string

	conn    chan connResult // the database being opened, until connect
	connErr error

	m       *history.Manifest
	remote  []RemotePart        // history rows from elsewhere (OpenRemote)
	derived bool                // the sessions and tool_calls views exist
	evals   bool                // the eval_runs and eval_results views exist
	logs    map[string]LogState // sessions read from their logs
	skipped map[string]bool     // corrupt history files, by absolute path
	scope   string              // the session the views are scoped to (Scope)
	checked map[string]string   // history files whose checksum matched: path -> checksum
	files   []filePart          // the history files the events view reads
	rest    []string            // its other parts: the unsealed logs' rows, a remote's
	// foldOnly, set by a test, folds every session's events on each
	// query, as before summaries: the reference they are compared with.
	foldOnly bool
}

// Open scans the home: the history's manifest, and every session log that
// is not sealed as it is now (running, crashed, resumed since sealing, or
// never sealed), whose events are written to a temporary Parquet file with
// the history's schema. Warnings (a corrupt history file that is skipped)
// go to warn. Close removes the temporary file.
//
// Open does not look at every log. The manifest's snapshot of the sessions
// folder says which sessions are not sealed while the folder's time is
// unchanged (else the folder is listed), and only the logs of sealed
// sessions that are not final (see history.SessionEntry) are stat'ed to
// see whether they grew since sealing.
func Open(ctx context.Context, home string, warn io.Writer) (*DB, error) {
	return open(ctx, history.New(home), warn, nil)
}

// OpenStore is Open of the home st.Root, reading its logs through st: with
// its Witnesses (the checkpoints as well as the manifest), a log that lost
// durable records is corrupt in the sessions view, as it is to resume.
func OpenStore(ctx context.Context, st recorder.Store, warn io.Writer) (*DB, error) {
	h := history.New(st.Root)
	h.Store = st
	return open(ctx, h, warn, nil)
}

// OnOpen, when a test sets it, is called as any DB opens: a test that a
// command reads no SQL (`view`, whose memory DuckDB would exceed) fails
// in it.
var OnOpen func()

func open(ctx context.Context, hist *history.History, warn io.Writer, remote []RemotePart) (*DB, error) {
	if OnOpen != nil {
		OnOpen()
	}
	home := hist.Store.Root
	if warn == nil {
		warn = io.Discard
	}
	// DuckDB takes ~25 ms to open (registering its functions); it opens
	// on the other core while the manifest and logs are read.
	conn := make(chan connResult, 1)
	go func() {
		c, err := duckdb.NewConnector("", nil)
		conn <- connResult{c, err}
	}()
	d := &DB{home: home, hist: hist, warn: warn, conn: conn, skipped: map[string]bool{}, checked: map[string]string{}, remote: remote}
	if err := d.reload(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

type connResult struct {
	c   *duckdb.Connector
	err error
}

// connect waits for the database Open started.
func (d *DB) connect() error {
	if d.conn != nil {
		r := <-d.conn
		d.conn = nil
		if r.err != nil {
			d.connErr = fmt.Errorf("query: open duckdb: %w", r.err)
		} else {
			d.db = sql.OpenDB(r.c)
			d.db.SetMaxOpenConns(1)
		}
	}
	return d.connErr
}

// Close closes the database and removes its temporary files.
func (d *DB) Close() error {
	var err error
	if d.connect() == nil {
		err = d.db.Close()
	}
	if d.tmp != "" {
		os.RemoveAll(d.tmp)
	}
	return err
}

// Logs returns the sessions that were read from their logs, with what
// reading them found.
func (d *DB) Logs() map[string]LogState { return d.logs }

// fromLogs returns the sessions to read from their logs rather than from
// the history: those not sealed, those sealed whose log has changed since,
// and those whose history file is skipped as corrupt (mayBeGone: such a
// log may no longer exist, and then the session is left out).
func (d *DB) fromLogs(m *history.Manifest, dir dirState) (ids []string, mayBeGone map[string]bool, err error) {
	mayBeGone = map[string]bool{}
	switch dir {
	case dirAsSnapshot:
		ids = append(ids, m.SessionsDir.Unsealed...)
	case dirAbsent:
		// No logs at all: the history answers alone.
	default:
		all, err := d.hist.Store.IDs()
		if err != nil {
			return nil, nil, err
		}
		for _, id := range all {
			if _, ok := m.Sessions[id]; !ok {
				ids = append(ids, id)
			}
		}
	}
	for id, e := range m.Sessions {
		if len(d.skipped) > 0 && d.skipped[filepath.Join(d.hist.Dir, filepath.FromSlash(e.File))] {
			ids, mayBeGone[id] = append(ids, id), true
			continue
		}
		if e.Final {
			continue // never written again: the history has it as it is
		}
		st, err := os.Stat(d.hist.Store.LogPath(id))
		if err == nil && st.Size() != e.LogSize {
			ids = append(ids, id)
		}
	}
	return ids, mayBeGone, nil
}

// dirState is what the sessions folder is now, against the manifest's
// snapshot of it (history.SessionsSnapshot).
type dirState int

const (
	dirChanged    dirState = iota // listed to find the sessions not sealed
	dirAsSnapshot                 // the snapshot's Unsealed are the sessions not sealed
	dirAbsent                     // no logs at all
)

func (d *DB) sessionsDir(m *history.Manifest) dirState {
	st, err := os.Stat(filepath.Join(d.home, "sessions"))
	switch {
	case err == nil && m.SessionsDir.MTime != 0 && st.ModTime().UnixNano() == m.SessionsDir.MTime:
		return dirAsSnapshot
	case errors.Is(err, os.ErrNotExist):
		return dirAbsent
	}
	return dirChanged
}

// manifest loads the manifest, without the sessions that are final and
// sealed whole (history.LoadManifestChanging) when the sessions folder is
// as the snapshot says and no file is skipped: nothing then asks about
// those sessions. Otherwise fromLogs needs every sealed session.
func (d *DB) manifest() (*history.Manifest, dirState, error) {
	if len(d.skipped) == 0 && d.remote == nil {
		m, err := history.LoadManifestChanging(d.hist.Dir)
		if err != nil {
			return nil, 0, err
		}
		if dir := d.sessionsDir(m); !m.Partial || dir != dirChanged {
			return m, dir, nil
		}
	}
	m, err := d.hist.Manifest()
	if err != nil {
		return nil, 0, err
	}
	return m, d.sessionsDir(m), nil
}

// load reads the manifest and the logs to read and (re)creates the views.
func (d *DB) load(ctx context.Context) error {
	var m *history.Manifest
	var dir dirState
	for {
		d.m = nil
		var err error
		if m, dir, err = d.manifest(); err != nil {
			return err
		}
		d.m = m
		skipped, err := d.verify()
		if err != nil {
			return err
		}
		if !skipped {
			break
		}
		// Again with the whole manifest: the skipped file's sessions
		// are read from their logs.
	}
	ids, mayBeGone, err := d.fromLogs(m, dir)
	if err != nil {
		return err
	}
	d.logs = map[string]LogState{}
	usable := 0
	for _, p := range d.m.LiveFiles(d.hist.Dir) {
		if !d.skipped[p] {
			usable++
		}
	}
	if len(ids) == 0 && usable > 0 {
		return d.createViews(ctx, "")
	}
	// The rows of the logs, or an empty file that gives the views their
	// columns when no history file can.
	if d.tmp == "" {
		if d.tmp, err = os.MkdirTemp("", "agentctl-query-"); err != nil {
			return fmt.Errorf("query: %w", err)
		}
	}
	livePath := filepath.Join(d.tmp, "live.parquet")
	lw, err := history.CreateRows(livePath)
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	if err := d.readLogs(ids, mayBeGone, lw); err != nil {
		lw.Close()
		return fmt.Errorf("query: %w", err)
	}
	if err := lw.Close(); err != nil {
		return fmt.Errorf("query: %w", err)
	}
	if lw.Rows() == 0 && usable > 0 {
		livePath = ""
	}
	return d.createViews(ctx, livePath)
}

// logBatch is how many rows of a log are converted before they are
// written: the memory of reading a log, whatever its length.
const logBatch = 4096

// readLogs writes the rows of the logs of ids to lw, reading them a
// record at a time (recorder.StreamFile), 8 at once, and records in
// d.logs what reading each found. A log of a million events costs a batch
// of rows, not the log's events and rows held whole.
func (d *DB) readLogs(ids []string, mayBeGone map[string]bool, lw *history.RowWriter) error {
	var mu sync.Mutex // d.logs, lw, werr
	var werr error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, id := range ids {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			var batch []history.Row // grows to logBatch: most logs are short
			var convErr error
			var n int64
			flush := func() {
				mu.Lock()
				defer mu.Unlock()
				if werr == nil && len(batch) > 0 {
					werr = lw.Write(batch)
				}
				batch = batch[:0]
			}
			_, tail, err := d.hist.Store.Stream(id, func(ev session.Event) {
				r, rerr := history.FromEvent(id, ev)
				if rerr != nil {
					convErr = errors.Join(convErr, rerr)
					return
				}
				n++
				if batch = append(batch, r); len(batch) == logBatch {
					flush()
				}
			})
			if err != nil && mayBeGone[id] && errors.Is(err, os.ErrNotExist) {
				return
			}
			if errors.Is(err, vfs.ErrNotRegular) {
				// Someone put a named pipe or a device where the log
				// goes: not read (it could block every reader), not a
				// session.
				mu.Lock()
				fmt.Fprintf(d.warn, "agentctl: warning: skipping session %s: %v\n", termsafe.Line(id), err)
				mu.Unlock()
				return
			}
			if errors.Is(err, recorder.ErrNotStarted) {
				// Nothing of it was recorded: not a session, and not
				// corrupt. One being created now is not mentioned.
				if !recorder.Live(d.hist.Store.SessionDir(id)) {
					mu.Lock()
					fmt.Fprintf(d.warn, "agentctl: note: session %s never started (its run stopped before it recorded its first event: killed, or out of disk); 'agentctl history seal' removes its empty folder %s\n", id, d.hist.Store.SessionDir(id))
					mu.Unlock()
				}
				return
			}
			flush()
			mu.Lock()
			defer mu.Unlock()
			d.logs[id] = LogState{Torn: tail.Torn, Err: errors.Join(err, convErr), Events: n}
		})
	}
	wg.Wait()
	return werr
}

// beforeViews, when set by a test, runs as createViews starts.
var beforeViews func()

func (d *DB) createViews(ctx context.Context, livePath string) error {
	if err := d.connect(); err != nil {
		return err
	}
	if beforeViews != nil {
		beforeViews()
	}
	d.files = d.files[:0]
	for _, f := range d.m.Files {
		p := filepath.Join(d.hist.Dir, filepath.FromSlash(f.Path))
		if d.skipped[p] {
			continue
		}
		excl := slices.Clone(f.Dropped)
		for id := range d.logs {
			if e, ok := d.m.Sessions[id]; ok && e.File == f.Path {
				excl = append(excl, id)
			}
		}
		d.files = append(d.files, filePart{abs: p, rel: f.Path, crc: f.CRC32C, excl: excl})
	}
	d.files = append(d.files, d.remoteFiles()...)
	parts := readParts(d.files, func(f filePart) string { return f.abs })
	d.rest = d.rest[:0]
	if livePath != "" {
		d.rest = append(d.rest, fmt.Sprintf("SELECT * FROM read_parquet(%s, hive_partitioning = false)", quote(livePath)))
	}
	parts = append(parts, d.rest...)
	// Files sealed by an older agentctl lack the columns added since;
	// columns are matched by name, and the typed empty part gives the view
	// every column even when no file has it.
	parts = append(parts, addedColumns)
	stmts := []string{"CREATE OR REPLACE VIEW main.events AS " + strings.Join(parts, "\nUNION ALL BY NAME ")}
	if d.derived {
		stmts = append(stmts, d.derivedViews(ctx)...)
	}
	if _, err := d.db.ExecContext(ctx, strings.Join(stmts, ";\n")); err != nil {
		return fmt.Errorf("query: create views: %w", err)
	}
	if d.evals {
		if err := d.createEvalViews(ctx); err != nil {
			return err
		}
	}
	return d.scopeViews(ctx)
}

// addedColumns is a part of the events view with no rows and the columns
// history.Row gained after the first release, so a view over files sealed
// before still has them (NULL).
const addedColumns = `SELECT NULL::VARCHAR AS refusal, NULL::BIGINT AS cache_read_input_tokens,
  NULL::BIGINT AS cache_creation_input_tokens, NULL::BIGINT AS max_tokens, NULL::VARCHAR AS response_id,
  NULL::VARCHAR AS error_type, NULL::BIGINT AS attempt, NULL::BIGINT AS parent_seq WHERE false`

// needDerived reports whether q may use the sessions, tool_calls or
// model_calls views: it names one, or lists the catalog. Binding those
// views costs more than a simple query over events, so they are made on
// first use.
func needDerived(q string) bool {
	q = strings.ToLower(q)
	for _, w := range []string{"sessions", "tool_calls", "model_calls", "show", "describe", "summarize", "information_schema", "duckdb_", "pragma"} {
		if strings.Contains(q, w) {
			return true
		}
	}
	return false
}

// ensureDerived creates the derived views if q may use them and they do
// not exist yet.
func (d *DB) ensureDerived(ctx context.Context, q string) error {
	if d.derived || !needDerived(q) {
		return nil
	}
	if _, err := d.db.ExecContext(ctx, strings.Join(d.derivedViews(ctx), ";\n")); err != nil {
		return fmt.Errorf("query: create views: %w", err)
	}
	d.derived = true
	return d.scopeViews(ctx)
}

// derivedViews are the statements that make the views over events, in
// the order they read each other (sessions reads tool_calls).
func (d *DB) derivedViews(ctx context.Context) []string {
	return []string{"CREATE OR REPLACE VIEW main.tool_calls AS " + toolCallsOf("main.events"), d.factsView(ctx), d.sessionsView(), modelCallsView}
}

// modelCallsView has one row per model_call event: every provider request,
// a failed, retried or interrupted one too, as the log records it. Its
// token and cost columns are those the sessions view sums (a session's
// input_tokens is the sum of its rows' input_tokens, and so on), so the two
// always agree. attempt is 1 for a call tried once (the log leaves it out);
// error_type and error say why a call failed (NULL when it did not);
// purpose is the attrs' ("compaction" for a summary request).
const modelCallsView = `CREATE OR REPLACE VIEW main.model_calls AS
SELECT session_id, seq, ts, nullif(provider, '') AS provider, nullif(model, '') AS model,
  coalesce(input_tokens, 0) AS input_tokens, coalesce(output_tokens, 0) AS output_tokens,
  coalesce(input_tokens, 0) + coalesce(output_tokens, 0) AS tokens,
  coalesce(cache_read_input_tokens, 0) AS cache_read_input_tokens,
  coalesce(cache_creation_input_tokens, 0) AS cache_creation_input_tokens,
  coalesce(cost_usd, 0) AS cost_usd, latency_ms, nullif(finish_reason, '') AS finish_reason,
  nullif(error_type, '') AS error_type, nullif(error, '') AS error,
  coalesce(nullif(attempt, 0), 1) AS attempt, nullif(max_tokens, 0) AS max_tokens,
  nullif(request_digest, '') AS request_digest, nullif(response_id, '') AS response_id,
  json_extract_string(nullif(attrs, ''), '$.purpose') AS purpose
FROM main.events WHERE kind = 'model_call'`

// sessionsView returns the sessions view's statement with what the log
// cannot say about itself (session.State's inputs): the sessions a process
// is writing now (it holds the lease; see recorder.Live), which tell a
// running session from a crashed one when the log has no end, and those
// whose log is corrupt. Only sessions that may lack an end are probed:
// those read from their logs and those sealed as not final.
func (d *DB) sessionsView() string {
	// '' names no session (ids are never empty) and keeps the lists
	// non-empty; NULL would make NOT IN unknown for every session.
	live, corrupt := []string{"''"}, []string{"''"}
	probe := func(id string) {
		if recorder.Live(d.hist.Store.SessionDir(id)) {
			live = append(live, quote(id))
		}
	}
	for id, ls := range d.logs {
		probe(id)
		if errors.Is(ls.Err, recorder.ErrCorrupt) {
			corrupt = append(corrupt, quote(id))
		}
	}
	for id, e := range d.m.Sessions {
		if _, read := d.logs[id]; !read && !e.Final {
			probe(id)
		}
	}
	return strings.NewReplacer("$LIVE", strings.Join(live, ", "), "$CORRUPT", strings.Join(corrupt, ", ")).Replace(sessionsView)
}

// sessionsView computes session.State's figures, by the definitions of
// its doc, from main.session_facts (sessionFacts of every session's
// events) and what the log cannot say about itself: the status is corrupt
// for a damaged log, that of the last event if it is session_finished,
// else running while a process holds the session's lease (a run, or
// collect writing a production session), imported for an import with no
// session_finished, and crashed for the rest; provider and model are
// those in force (the latest model_changed); tokens and cost are summed
// over model_call events (input_tokens includes the cache reads and
// writes, whose sums follow); tool_calls counts the session's rows of
// the tool_calls view (calls dispatched or answered); errors counts error
// events and tool results with status error; refusals and truncations
// count assistant messages that refused or were cut at the output cap;
// retries counts the model tries after the first of a call;
// imported_from and source_status are an import's source tool and the
// end state it recorded (NULL for sessions agentctl ran);
// parent_session_id is the header's (a subagent's or a fork's parent),
// parent_seq a subagent's (its parent's task intent) and forked_from a
// fork's, NULL when the header has none. origin says what recorded the
// session, from its header's attrs: collect (spans agentctl collect
// received), proxy, import (any other imported_from), else run. turns
// counts assistant messages (State.Turns); reason is the ending
// session_finished's; finish_reason is the last model_call's (NULL when
// that call failed: an earlier call's would misreport the end); tags and
// user_id are the header's attrs tags and user_id (FORMAT.md, "Tags and
// user"). tags is a MAP(VARCHAR, VARCHAR), empty when the header has
// none, so tags['env'] = 'ci' and map_contains(tags, 'env') filter in SQL.
// not_recorded is what an import's source does not record (the header's
// attrs not_recorded: 'usage' means its tokens and cost are not zeros
// but unknown), empty for a fork of one, which records its own part: the
// rule of session.NotRecorded, held to it by the fold test.
const sessionsView = `CREATE OR REPLACE VIEW main.sessions AS
SELECT session_id, name, provider, model, status, started, ended,
  date_diff('millisecond', started, ended) AS duration_ms,
  events, input_tokens, output_tokens, input_tokens + output_tokens AS tokens, cost_usd,
  tool_calls, errors,
  cache_read_input_tokens, cache_creation_input_tokens, refusals, truncations, retries,
  imported_from, source_status, parent_session_id, parent_seq, forked_from,
  CASE WHEN json_extract_string(hattrs, '$.otlp_source') = 'collect' THEN 'collect'
    WHEN json_extract_string(hattrs, '$.recorded_by') = 'proxy' THEN 'proxy'
    WHEN imported_from IS NOT NULL THEN 'import'
    ELSE 'run' END AS origin,
  turns, reason, finish_reason,
  coalesce(TRY_CAST(json_extract(hattrs, '$.tags') AS MAP(VARCHAR, VARCHAR)), MAP {}::MAP(VARCHAR, VARCHAR)) AS tags,
  nullif(json_extract_string(hattrs, '$.user_id'), '') AS user_id,
  CASE WHEN forked_from IS NULL THEN coalesce(TRY_CAST(json_extract(hattrs, '$.not_recorded') AS VARCHAR[]), []::VARCHAR[])
    ELSE []::VARCHAR[] END AS not_recorded
FROM (
  SELECT session_id, name, provider, model,
    CASE WHEN session_id IN ($CORRUPT) THEN 'corrupt'
      WHEN last_kind = 'session_finished' THEN last_status
      WHEN session_id IN ($LIVE) THEN 'running'
      WHEN finishes = 0 AND imported_from IS NOT NULL THEN 'imported'
      ELSE 'crashed' END AS status,
    started::TIMESTAMPTZ AS started,
    CASE WHEN last_kind = 'session_finished' AND session_id NOT IN ($CORRUPT) THEN last_ts::TIMESTAMPTZ END AS ended,
    events, input_tokens::HUGEINT AS input_tokens, output_tokens::HUGEINT AS output_tokens, cost_usd,
    tool_calls, errors, cache_read_input_tokens::HUGEINT AS cache_read_input_tokens,
    cache_creation_input_tokens::HUGEINT AS cache_creation_input_tokens, refusals, truncations, retries,
    imported_from, source_status, parent_session_id, parent_seq, forked_from, hattrs, turns, reason, finish_reason
  FROM agentctl.session_facts
)`

// sessionFacts is the part of the sessions view that is the session's
// events alone, one row per session of src (a relation with the events
// view's columns): what a sealed file's summary holds (summaries.go), so
// a session's figures are folded once per history file, not on every
// query. Sums are BIGINT here (a summary keeps them exactly; HUGEINT does
// not round-trip through Parquet) and HUGEINT in the view, as before.
// Its text is part of every summary's name: a change to it makes the
// summaries written before it unused.
const sessionFacts = `SELECT f.*, coalesce(t.n, 0)::BIGINT AS tool_calls FROM (
  SELECT session_id,
    arg_min(name, seq) FILTER (WHERE kind = 'session_started') AS name,
    arg_max(provider, seq) FILTER (WHERE kind IN ('session_started', 'model_changed')) AS provider,
    arg_max(model, seq) FILTER (WHERE kind IN ('session_started', 'model_changed')) AS model,
    arg_max(kind, seq) AS last_kind,
    arg_max(status, seq) AS last_status,
    arg_max(ts, seq) AS last_ts,
    count(*) FILTER (WHERE kind = 'session_finished') AS finishes,
    arg_min(ts, seq) FILTER (WHERE kind = 'session_started') AS started,
    count(*) AS events,
    coalesce(sum(input_tokens) FILTER (WHERE kind = 'model_call'), 0)::BIGINT AS input_tokens,
    coalesce(sum(output_tokens) FILTER (WHERE kind = 'model_call'), 0)::BIGINT AS output_tokens,
    coalesce(sum(cost_usd) FILTER (WHERE kind = 'model_call'), 0)::DOUBLE AS cost_usd,
    count(*) FILTER (WHERE kind = 'error' OR (kind = 'tool_result' AND status = 'error')) AS errors,
    coalesce(sum(cache_read_input_tokens) FILTER (WHERE kind = 'model_call'), 0)::BIGINT AS cache_read_input_tokens,
    coalesce(sum(cache_creation_input_tokens) FILTER (WHERE kind = 'model_call'), 0)::BIGINT AS cache_creation_input_tokens,
    count(*) FILTER (WHERE kind = 'assistant_message' AND coalesce(refusal, '') <> '') AS refusals,
    count(*) FILTER (WHERE kind = 'assistant_message' AND finish_reason = 'length') AS truncations,
    count(*) FILTER (WHERE kind = 'model_call' AND attempt > 1) AS retries,
    nullif(arg_min(json_extract_string(nullif(attrs, ''), '$.imported_from'), seq) FILTER (WHERE kind = 'session_started'), '') AS imported_from,
    nullif(arg_min(json_extract_string(nullif(attrs, ''), '$.source_status'), seq) FILTER (WHERE kind = 'session_started'), '') AS source_status,
    nullif(arg_min(parent_session_id, seq) FILTER (WHERE kind = 'session_started' AND seq = 1), '') AS parent_session_id,
    nullif(arg_min(parent_seq, seq) FILTER (WHERE kind = 'session_started' AND seq = 1), 0)::BIGINT AS parent_seq,
    nullif(arg_min(forked_from, seq) FILTER (WHERE kind = 'session_started' AND seq = 1), 0)::BIGINT AS forked_from,
    arg_min(nullif(attrs, ''), seq) FILTER (WHERE kind = 'session_started' AND seq = 1) AS hattrs,
    count(*) FILTER (WHERE kind = 'assistant_message') AS turns,
    CASE WHEN arg_max(kind, seq) = 'session_finished' THEN nullif(arg_max_null(reason, seq), '') END AS reason,
    nullif(arg_max_null(finish_reason, seq) FILTER (WHERE kind = 'model_call'), '') AS finish_reason
  FROM $SRC GROUP BY session_id
) f LEFT JOIN (SELECT session_id, count(*) AS n FROM ($TOOLCALLS) GROUP BY session_id) t USING (session_id)`

// factsOf is sessionFacts over the relation src.
func factsOf(src string) string {
	return strings.NewReplacer("$SRC", src, "$TOOLCALLS", toolCallsOf(src)).Replace(sessionFacts)
}

// toolCallsView has one row per tool call that was dispatched (an intent)
// or answered (a result), as session.State's calls: a call is its id and
// the assistant message that requested it (request_seq, the latest one
// with that id at or before the event; NULL when none did), so a model
// that reuses an id makes two calls, not one. Each call's latest
// tool_intent and latest tool_result are paired; status is the status of
// that result or the outcome of a later reconciled event, and pending with
// neither. One refused before dispatch has a result and no intent. args
// are the intent's, else the requesting message's (as session.State's
// Call.Args): the proxy and the importers record no intent.
const toolCallsSelect = `WITH req AS (
  SELECT a.session_id, u.c.id AS call_id, a.seq AS request_seq, nullif(u.c.args::VARCHAR, 'null') AS request_args
  FROM $SRC a, unnest(from_json(nullif(a.tool_calls, ''), '[{"id":"VARCHAR","args":"JSON"}]')) AS u(c)
  WHERE a.kind = 'assistant_message' AND a.tool_calls IS NOT NULL
), ce AS (
  SELECT * FROM $SRC WHERE kind IN ('tool_intent', 'tool_result', 'reconciled')
), ev AS (
  SELECT ce.*, req.request_seq, req.request_args FROM ce ASOF LEFT JOIN req
    ON ce.session_id = req.session_id AND ce.call_id = req.call_id AND ce.seq > req.request_seq
), i AS (
  SELECT session_id, call_id, request_seq, arg_max(tool, seq) AS tool,
    coalesce(arg_max(nullif(args, ''), seq), any_value(request_args)) AS args, arg_max(idempotency_key, seq) AS idempotency_key, max(seq) AS intent_seq, arg_max(ts, seq) AS intent_ts
  FROM ev WHERE kind = 'tool_intent' GROUP BY session_id, call_id, request_seq
), r AS (
  SELECT session_id, call_id, request_seq, arg_max(tool, seq) AS tool, max(seq) AS result_seq, arg_max(ts, seq) AS result_ts,
    arg_max(status, seq) AS status, arg_max(latency_ms, seq) AS latency_ms, arg_max(error, seq) AS error,
    arg_max(output, seq) AS output, arg_max(artifact, seq) AS artifact, any_value(request_args) AS request_args
  FROM ev WHERE kind = 'tool_result' GROUP BY session_id, call_id, request_seq
), rc AS (
  SELECT session_id, call_id, request_seq, max(seq) AS reconciled_seq, arg_max(outcome, seq) AS outcome
  FROM ev WHERE kind = 'reconciled' GROUP BY session_id, call_id, request_seq
), c AS (
  SELECT coalesce(i.session_id, r.session_id) AS session_id, coalesce(i.call_id, r.call_id) AS call_id,
    coalesce(i.request_seq, r.request_seq) AS request_seq,
    coalesce(i.tool, r.tool) AS tool, coalesce(i.args, r.request_args) AS args, i.idempotency_key, i.intent_seq, i.intent_ts,
    r.result_seq, r.result_ts, r.status, r.latency_ms, r.error, r.output, r.artifact
  FROM i FULL OUTER JOIN r ON i.session_id = r.session_id AND i.call_id = r.call_id AND i.request_seq IS NOT DISTINCT FROM r.request_seq
)
SELECT c.session_id, c.call_id, c.tool, c.args, c.idempotency_key, c.intent_seq, c.intent_ts, c.result_seq, c.result_ts,
  CASE WHEN rc.reconciled_seq > coalesce(c.result_seq, 0) THEN rc.outcome ELSE coalesce(c.status, 'pending') END AS status,
  c.latency_ms, c.error, c.output, c.artifact, c.request_seq
FROM c LEFT JOIN rc ON c.session_id = rc.session_id AND c.call_id = rc.call_id AND c.request_seq IS NOT DISTINCT FROM rc.request_seq`

// toolCallsOf is the tool_calls view's query over the relation src.
func toolCallsOf(src string) string { return strings.ReplaceAll(toolCallsSelect, "$SRC", src) }

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Result is the answer to a query.
type Result struct {
	Columns []string
	Types   []string // DuckDB type names
	Rows    [][]any
}

// Query runs one SQL statement (or several; the last one's rows are
// returned) over the views. An error in the SQL is returned as DuckDB
// reports it, followed by the view names. A history file that turns out
// to be corrupt is skipped with a warning naming it (its sessions are read
// from their logs where those still exist), and the query is run again.
func (d *DB) Query(ctx context.Context, q string) (*Result, error) {
	var res *Result
	err := d.retry(ctx, func() error {
		if err := d.ensureDerived(ctx, q); err != nil {
			return err
		}
		if err := d.ensureEvals(ctx, q); err != nil {
			return err
		}
		var err error
		res, err = d.run(ctx, q)
		return err
	})
	return res, err
}

// retry runs fn, and runs it again after reloading the history when it
// failed because a compaction swapped the manifest since Open, or because
// a history file is corrupt (which is then skipped).
func (d *DB) retry(ctx context.Context, fn func() error) error {
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil {
			return nil
		}
		if attempt >= 3 || ctx.Err() != nil {
			return sqlError(err)
		}
		if !d.swapped() && (!fileError(err) || !d.skipCorrupt(err)) {
			return sqlError(err)
		}
		if err := d.reload(ctx); err != nil {
			return err
		}
	}
}

// reload loads the history, skipping corrupt files that DuckDB trips over
// while making the views (it reads the first file's footer then).
func (d *DB) reload(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		err := d.load(ctx)
		if err == nil {
			return nil
		}
		if attempt >= 5 || d.m == nil || d.connErr != nil || errors.Is(err, history.ErrCorruptFile) || !fileError(err) {
			return err
		}
		// A compaction swapped the manifest while the views were being
		// made: the files it removed are gone, not damaged. Load again.
		if d.swapped() {
			continue
		}
		// A file that failed its checksum with no logs to stand in for it
		// (verify) is not skipped here either.
		if !d.skipCorrupt(err) {
			return err
		}
	}
}

// swapped reports whether the history's manifest is no longer the one d
// read: a compaction or a seal has replaced it since.
func (d *DB) swapped() bool {
	if d.m == nil {
		return false
	}
	m, err := history.LoadManifestChanging(d.hist.Dir)
	return err == nil && m.Generation != d.m.Generation
}

func (d *DB) run(ctx context.Context, q string) (*Result, error) {
	rows, err := d.db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	res := &Result{}
	for _, c := range cols {
		res.Columns = append(res.Columns, c.Name())
		res.Types = append(res.Types, c.DatabaseTypeName())
	}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		res.Rows = append(res.Rows, vals)
	}
	return res, rows.Err()
}

// fileError reports whether err may come from a damaged file rather than
// from the SQL.
func fileError(err error) bool {
	var se *SQLError
	if errors.As(err, &se) {
		err = se.Err
	}
	s := strings.TrimPrefix(err.Error(), "query: create views: ")
	for _, p := range []string{"Parser Error", "Binder Error", "Catalog Error", "Conversion Error"} {
		if strings.HasPrefix(s, p) {
			return false
		}
	}
	return true
}

// verify checks each live history file the views would read against the
// size and checksum the manifest recorded (history.FileEntry.Verify),
// once per file for the life of the DB: DuckDB reads a page whose data
// bytes were flipped as other values, with no error. A damaged file whose
// sessions all still have their logs is skipped with a warning (they are
// read from the logs, which give the answer the intact file gave, and
// skipped reports it); one with rows of a session whose log is gone fails
// the query, naming the file, so that no answer silently differs.
func (d *DB) verify() (skipped bool, err error) {
	var todo []history.FileEntry
	for _, f := range d.m.Files {
		p := filepath.Join(d.hist.Dir, filepath.FromSlash(f.Path))
		if f.CRC32C != "" && !d.skipped[p] && d.checked[p] != f.CRC32C {
			todo = append(todo, f)
		}
	}
	if len(todo) == 0 {
		return false, nil
	}
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, f := range todo {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = f.Verify(d.hist.Dir)
		})
	}
	wg.Wait()
	var full *history.Manifest // every session, to tell which are in a bad file
	for i, f := range todo {
		p := filepath.Join(d.hist.Dir, filepath.FromSlash(f.Path))
		if errs[i] == nil {
			d.checked[p] = f.CRC32C
			continue
		}
		if !errors.Is(errs[i], history.ErrCorruptFile) {
			return false, fmt.Errorf("query: %w", errs[i])
		}
		if full == nil {
			if full = d.m; full.Partial {
				if full, err = d.hist.Manifest(); err != nil {
					return false, err
				}
			}
		}
		var lost []string
		for id, e := range full.Sessions {
			if e.File != f.Path {
				continue
			}
			if _, err := os.Stat(d.hist.Store.LogPath(id)); err != nil {
				lost = append(lost, id)
			}
		}
		if len(lost) > 0 {
			slices.Sort(lost)
			return false, fmt.Errorf("query: %w; the logs of %d of its sessions (%s) are gone, so no query can answer without it. "+
				"Restore the file from a backup, or rebuild the history from the logs without it: move %s away and run 'agentctl history seal' (the sessions whose logs are gone are then left out)",
				errs[i], len(lost), strings.Join(lost[:min(len(lost), 3)], ", "), d.hist.Dir)
		}
		d.skipped[p] = true
		fmt.Fprintf(d.warn, "agentctl: warning: skipping corrupt history file %s: %v; its sessions are read from their logs\n", p, firstLine(errs[i]))
		skipped = true
	}
	return skipped, nil
}

// skipCorrupt finds the corrupt history files (those DuckDB named, else by
// reading each file) and marks them skipped with a warning. It reports
// whether anything was skipped; the caller recreates the views.
func (d *DB) skipCorrupt(qerr error) bool {
	var bad []string
	var reasons []error
	files := d.m.LiveFiles(d.hist.Dir)
	for _, p := range files {
		if !d.skipped[p] && strings.Contains(qerr.Error(), p) {
			bad, reasons = append(bad, p), append(reasons, qerr)
		}
	}
	if len(bad) == 0 {
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for _, p := range files {
			if d.skipped[p] {
				continue
			}
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				if err := history.Check(p); err != nil {
					mu.Lock()
					bad, reasons = append(bad, p), append(reasons, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	if len(bad) == 0 {
		return false
	}
	for i, p := range bad {
		d.skipped[p] = true
		fmt.Fprintf(d.warn, "agentctl: warning: skipping corrupt history file %s: %v\n", p, firstLine(reasons[i]))
	}
	return true
}

// Skipped returns the corrupt history files that queries left out.
func (d *DB) Skipped() []string {
	out := slices.Collect(func(yield func(string) bool) {
		for p := range d.skipped {
			if !yield(p) {
				return
			}
		}
	})
	slices.Sort(out)
	return out
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// SQLError is an error DuckDB reported for a query; its text is DuckDB's.
type SQLError struct{ Err error }

func (e *SQLError) Error() string {
	return fmt.Sprintf("%v\nviews: %s (try: agentctl query \"DESCRIBE events\")", e.Err, strings.Join(Views, ", "))
}

func (e *SQLError) Unwrap() error { return e.Err }

func sqlError(err error) error { return &SQLError{Err: err} }
