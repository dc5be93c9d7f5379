// Package diagnose writes the postmortem of one session in plain words,
// two ways with one result: Run, from canned SQL queries over the query
// package's views (events, sessions, tool_calls), which read a home and a
// debug bundle alike and are the reference; and Fold (Stream for a
// session of a home), from the log read a record at a time on the session
// package's lean fold, which needs no DuckDB and holds a few words a tool
// call (a million-event session: ~50 MB against ~1.6 GB for the SQL).
// Both gather each finding's facts and make its text in one place
// (findings.go); TestStreamedIsSQL holds their reports equal.
//
// Every Finding cites the seqs it rests on, so a reader can check it with
// `agentctl show` or `agentctl query`: all of them up to MaxSeqs, else the
// first and the last MaxSeqs/2, the text saying how many there are. What
// a finding lists is bounded the same way (a session of 70,000
// compactions is summarised, not listed), so a report stays a few lines
// whatever the log's length.
//
// # Example
//
//	db, _ := query.Open(ctx, home, os.Stderr)
//	rep, err := diagnose.Run(ctx, db, id, replaycheck.Anchors(id, events, nil))
//	// or, from the log alone:
//	rep, _, err := diagnose.Stream(recorder.Store{Root: home}, id)
//	rep.WriteText(os.Stdout)
//
// # Findings, in report order
//
//	loop          repeated tool calls (same tool, same arguments) and the
//	              tokens of the turns that asked for them, from the first
//	              failure that was then repeated
//	after_error   the share of tokens spent after the first error
//	provider      what the provider said that was not a plain answer:
//	              refusals (with their text), turns cut at the output cap,
//	              failed model calls with the provider's error type and the
//	              text streamed before the failure, retried tries, and the
//	              share of input tokens read from or written to the cache
//	budget        the burn rate, the spec's limits and any budget stop
//	pending       intents without a result; needs_human reconciliations
//	approvals     approval requests and how long each waited
//	compaction    compactions, and whether the goal survived them
//	              (replaycheck.Anchors: the first user message verbatim)
//	slow_tools    the slowest tool calls
//	exit          the exit path: each session_finished, or where the log
//	              stops when it has none (a crash)
//
// # Concurrency
//
// Run issues its queries one after the other on the Querier it is given.
// A Fold is one goroutine's.
package diagnose

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/clip"
	"github.com/agentctl/agentctl/internal/query"
	replaycheck "github.com/agentctl/agentctl/internal/replay/check"
	"github.com/agentctl/agentctl/internal/session"
)

// Querier runs SQL over the views; *query.DB is one.
type Querier interface {
	Query(ctx context.Context, q string) (*query.Result, error)
}

var _ Querier = (*query.DB)(nil)

// Report is the postmortem. Its JSON form is `diagnose --json` and only
// grows.
type Report struct {
	SessionID string  `json:"session_id"`
	Name      string  `json:"name"`
	Status    string  `json:"status"`
	Events    int64   `json:"events"`
	Tokens    int64   `json:"tokens"`
	CostUSD   float64 `json:"cost_usd"`
	ToolCalls int64   `json:"tool_calls"`
	// ImportedFrom and SourceStatus: an imported session's source tool
	// and the end state it recorded.
	ImportedFrom string `json:"imported_from,omitempty"`
	SourceStatus string `json:"source_status,omitempty"`
	// NotRecorded is what an import's source does not record
	// (session.NotRecorded): the findings do not count its zeros.
	NotRecorded []string  `json:"not_recorded,omitempty"`
	Findings    []Finding `json:"findings"`
}

// Finding is one observation, with the seqs it rests on.
type Finding struct {
	Kind string  `json:"kind"`
	Text string  `json:"text"`
	Seqs []int64 `json:"seqs"`
}

// MaxSeqs bounds the seqs a finding cites: past it, the first and the
// last MaxSeqs/2.
const MaxSeqs = 20

// maxListed bounds the items a finding's text lists one by one (the
// compactions whose anchoring failed, pending intents, failed calls); the
// rest are counted. A finding is one line: an imported transcript of 4,000
// calls with no results printed every one of them.
const maxListed = 5

// joinListed joins the first maxListed parts and counts the rest.
func joinListed(parts []string, sep string) string {
	if len(parts) <= maxListed {
		return strings.Join(parts, sep)
	}
	return strings.Join(parts[:maxListed], sep) + fmt.Sprintf("%sand %d more", sep, len(parts)-maxListed)
}

type diag struct {
	ctx     context.Context
	db      Querier
	id      string
	rep     *Report
	anchors replaycheck.AnchorsReport
}

// Run diagnoses session id. anchors is the anchoring check of its
// compactions (replaycheck.Anchors, or an Anchorer fed the log as it is
// read, so a caller need not hold the events); everything else comes from
// the views.
func Run(ctx context.Context, db Querier, id string, anchors replaycheck.AnchorsReport) (*Report, error) {
	d := &diag{ctx: ctx, db: db, id: id, rep: &Report{SessionID: id, Findings: []Finding{}}, anchors: anchors}
	steps := []func() error{d.totals, d.loop, d.afterError, d.provider, d.budget, d.pending, d.approvals, d.compactions, d.slowTools, d.exit}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return d.rep, nil
}

// q runs one canned query; ID in it is replaced by the quoted session id.
func (d *diag) q(sql string) ([][]any, error) {
	sql = strings.ReplaceAll(sql, "$ID", "'"+strings.ReplaceAll(d.id, "'", "''")+"'")
	res, err := d.db.Query(d.ctx, sql)
	if err != nil {
		return nil, fmt.Errorf("diagnose: %w", err)
	}
	return res.Rows, nil
}

func (d *diag) add(kind, text string, seqs ...int64) {
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	if len(seqs) > MaxSeqs {
		seqs = append(seqs[:MaxSeqs/2:MaxSeqs/2], seqs[len(seqs)-MaxSeqs/2:]...)
	}
	if seqs == nil {
		seqs = []int64{}
	}
	d.rep.Findings = append(d.rep.Findings, Finding{Kind: kind, Text: text, Seqs: seqs})
}

func (d *diag) totals() error {
	rows, err := d.q(`SELECT name, status, events, tokens::BIGINT, cost_usd, tool_calls, coalesce(imported_from, ''), coalesce(source_status, '')
FROM sessions WHERE session_id = $ID`)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return fmt.Errorf("diagnose: session %s has no events in the views", d.id)
	}
	r := rows[0]
	d.rep.Name, d.rep.Status, d.rep.Events, d.rep.Tokens = query.Text(r[0]), query.Text(r[1]), query.Int(r[2]), query.Int(r[3])
	d.rep.CostUSD, d.rep.ToolCalls = flt(r[4]), query.Int(r[5])
	d.rep.ImportedFrom, d.rep.SourceStatus = query.Text(r[6]), query.Text(r[7])
	if d.rep.ImportedFrom == "" {
		return nil
	}
	rows, err = d.q(`SELECT coalesce(attrs, ''), coalesce(forked_from, 0)::BIGINT FROM events WHERE session_id = $ID AND seq = 1`)
	if err != nil || len(rows) == 0 {
		return err
	}
	d.rep.NotRecorded = session.NotRecorded(session.Event{Attrs: json.RawMessage(query.Text(rows[0][0])), ForkedFrom: query.Int(rows[0][1])})
	return nil
}

// asksSQL lists every tool call the model asked for, with the tokens of the
// model call that produced it and what became of it.
const asksSQL = `WITH ev AS (SELECT * FROM events WHERE session_id = $ID),
asks AS (
  SELECT a.seq, u.c.id AS call_id, u.c.name AS tool, coalesce(CAST(json(u.c.args) AS VARCHAR), '') AS args,
    coalesce(m.input_tokens + m.output_tokens, a.input_tokens + a.output_tokens, 0) AS tokens
  FROM ev a LEFT JOIN ev m ON m.seq = a.seq + 1 AND m.kind = 'model_call',
    unnest(from_json(a.tool_calls, '[{"id":"VARCHAR","name":"VARCHAR","args":"JSON"}]')) AS u(c)
  WHERE a.kind = 'assistant_message' AND a.tool_calls IS NOT NULL
)
SELECT k.seq, k.call_id, k.tool, k.args, k.tokens::BIGINT, t.result_seq, coalesce(t.status, 'not run') AS status
FROM asks k LEFT JOIN tool_calls t ON t.session_id = $ID AND t.call_id = k.call_id
ORDER BY k.seq, k.call_id, t.result_seq NULLS FIRST`

func (d *diag) loop() error {
	rows, err := d.q(asksSQL)
	if err != nil {
		return err
	}
	type result struct {
		seq    int64
		failed bool
	}
	results := make([]result, len(rows))
	f := loopFacts{names: map[uint64][2]string{}, result: func(i int32) (int64, bool) { return results[i].seq, results[i].failed }}
	for i, r := range rows {
		tool, args := query.Text(r[2]), query.Text(r[3])
		k := askKey(tool, args)
		f.names[k] = [2]string{tool, args}
		f.asks = append(f.asks, askRow{seq: query.Int(r[0]), tokens: query.Int(r[4]), key: k, ref: int32(i)})
		results[i] = result{query.Int(r[5]), query.Text(r[6]) == session.ResultError}
	}
	d.renderLoop(f)
	return nil
}

func (d *diag) afterError() error {
	rows, err := d.q(`WITH ev AS (SELECT * FROM events WHERE session_id = $ID),
fe AS (SELECT min(seq) AS s FROM ev WHERE kind = 'error' OR (kind = 'tool_result' AND status = 'error')
  OR (kind = 'model_call' AND coalesce(error, '') <> ''))
SELECT fe.s, (SELECT kind FROM ev WHERE seq = fe.s), (SELECT coalesce(tool, '') FROM ev WHERE seq = fe.s),
  (SELECT coalesce(error, '') FROM ev WHERE seq = fe.s),
  coalesce(sum(coalesce(m.input_tokens, 0) + coalesce(m.output_tokens, 0)) FILTER (WHERE m.seq > fe.s), 0)::BIGINT,
  count(m.seq) FILTER (WHERE m.seq > fe.s), min(m.seq) FILTER (WHERE m.seq > fe.s), max(m.seq) FILTER (WHERE m.seq > fe.s)
FROM fe LEFT JOIN ev m ON m.kind = 'model_call'
WHERE fe.s IS NOT NULL GROUP BY fe.s`)
	if err != nil || len(rows) == 0 {
		return err
	}
	r := rows[0]
	d.renderAfterError(afterErrorFacts{seq: query.Int(r[0]), kind: query.Text(r[1]), tool: query.Text(r[2]), msg: query.Text(r[3]), after: query.Int(r[4]), calls: query.Int(r[5]),
		minSeq: query.Int(r[6]), maxSeq: query.Int(r[7])})
	return nil
}

// provider reports what the provider said that was not a plain answer.
func (d *diag) provider() error {
	rows, err := d.q(`SELECT seq, kind, coalesce(refusal, ''), coalesce(finish_reason, ''), coalesce(error_type, ''),
  coalesce(error, ''), coalesce(text, ''), coalesce(attempt, 0)
FROM events WHERE session_id = $ID AND (
  (kind = 'assistant_message' AND (coalesce(refusal, '') <> '' OR finish_reason = 'length'))
  OR (kind = 'model_call' AND (coalesce(error, '') <> '' OR attempt > 1)))
ORDER BY seq`)
	if err != nil {
		return err
	}
	var f providerFacts
	for _, r := range rows {
		f.rows = append(f.rows, providerRow{seq: query.Int(r[0]), kind: query.Text(r[1]), refusal: query.Text(r[2]), finish: query.Text(r[3]), etype: query.Text(r[4]),
			msg: query.Text(r[5]), text: query.Text(r[6]), attempt: query.Int(r[7])})
	}
	cache, err := d.q(`SELECT coalesce(sum(input_tokens), 0)::BIGINT, coalesce(sum(cache_read_input_tokens), 0)::BIGINT,
  coalesce(sum(cache_creation_input_tokens), 0)::BIGINT, list(seq ORDER BY seq)
FROM events WHERE session_id = $ID AND kind = 'model_call' AND (cache_read_input_tokens > 0 OR cache_creation_input_tokens > 0)`)
	if err != nil {
		return err
	}
	if len(cache) > 0 {
		f.cacheIn, f.read, f.written, f.cacheSeqs = query.Int(cache[0][0]), query.Int(cache[0][1]), query.Int(cache[0][2]), ints(cache[0][3])
	}
	d.renderProvider(f)
	return nil
}

func (d *diag) budget() error {
	rows, err := d.q(`WITH ev AS (SELECT * FROM events WHERE session_id = $ID)
SELECT (SELECT spec FROM ev WHERE kind = 'session_started' ORDER BY seq LIMIT 1), min(seq), max(seq),
  date_diff('millisecond', min(ts), max(ts)),
  (SELECT list(seq ORDER BY seq) FROM ev WHERE kind = 'budget_exceeded'),
  (SELECT arg_max(reason, seq) FROM ev WHERE kind = 'budget_exceeded'),
  (SELECT list(CAST(attrs AS VARCHAR) ORDER BY seq) FROM ev WHERE kind = 'budget_changed')
FROM ev`)
	if err != nil || len(rows) == 0 {
		return err
	}
	r := rows[0]
	// The budget in force at the end, as the runner enforced it: the
	// header's, with each budget_changed (resume --budget) laid over it.
	var sp struct {
		Budget session.Budget `json:"budget"`
	}
	_ = json.Unmarshal([]byte(query.Text(r[0])), &sp)
	if changes, ok := r[6].([]any); ok {
		for _, c := range changes {
			_ = sp.Budget.Apply(json.RawMessage(query.Text(c)))
		}
	}
	d.renderBudget(budgetFacts{budget: sp.Budget, firstSeq: query.Int(r[1]), lastSeq: query.Int(r[2]), ms: query.Int(r[3]), stops: ints(r[4]), lastStopReason: query.Text(r[5])})
	return nil
}

func (d *diag) pending() error {
	rows, err := d.q(`SELECT call_id, tool, intent_seq, coalesce(idempotency_key, '') FROM tool_calls t
WHERE session_id = $ID AND status = 'pending' AND NOT EXISTS (
  SELECT 1 FROM events e WHERE e.session_id = $ID AND e.kind = 'reconciled' AND e.call_id = t.call_id)
ORDER BY intent_seq`)
	if err != nil {
		return err
	}
	var pending []pendingRow
	for _, r := range rows {
		pending = append(pending, pendingRow{callID: query.Text(r[0]), tool: query.Text(r[1]), intentSeq: query.Int(r[2]), key: query.Text(r[3])})
	}
	rows, err = d.q(`WITH ev AS (SELECT * FROM events WHERE session_id = $ID)
SELECT r.seq, r.call_id, coalesce(r.tool, ''), r.outcome,
  (SELECT min(x.seq) FROM ev x WHERE x.call_id = r.call_id AND x.seq > r.seq AND x.kind IN ('tool_result', 'reconciled'))
FROM ev r WHERE r.kind = 'reconciled' ORDER BY r.seq`)
	if err != nil {
		return err
	}
	var reconciled []reconciledRow
	for _, r := range rows {
		reconciled = append(reconciled, reconciledRow{seq: query.Int(r[0]), callID: query.Text(r[1]), tool: query.Text(r[2]), outcome: query.Text(r[3]), later: query.Int(r[4])})
	}
	d.renderPending(pending, reconciled)
	return nil
}

func (d *diag) approvals() error {
	rows, err := d.q(`WITH ev AS (SELECT * FROM events WHERE session_id = $ID)
SELECT r.seq, r.call_id, coalesce(r.tool, ''), min(x.seq), arg_min(x.kind, x.seq), date_diff('millisecond', r.ts, arg_min(x.ts, x.seq))
FROM ev r LEFT JOIN ev x ON x.call_id = r.call_id AND x.seq > r.seq AND x.kind IN ('approval_granted', 'approval_denied')
WHERE r.kind = 'approval_request' GROUP BY r.seq, r.call_id, r.tool, r.ts ORDER BY r.seq`)
	if err != nil {
		return err
	}
	var out []approvalRow
	for _, r := range rows {
		out = append(out, approvalRow{seq: query.Int(r[0]), callID: query.Text(r[1]), tool: query.Text(r[2]), decision: query.Int(r[3]), verdict: query.Text(r[4]), waitedMS: query.Int(r[5])})
	}
	d.renderApprovals(out)
	return nil
}

func (d *diag) compactions() error {
	rows, err := d.q(`SELECT seq, through FROM events WHERE session_id = $ID AND kind = 'compaction' ORDER BY seq`)
	if err != nil || len(rows) == 0 {
		return err
	}
	var seqs []int64
	for _, r := range rows {
		seqs = append(seqs, query.Int(r[0]))
	}
	d.renderCompactions(seqs, query.Int(rows[len(rows)-1][1]))
	return nil
}

func (d *diag) slowTools() error {
	rows, err := d.q(`SELECT tool, call_id, result_seq, latency_ms, status, (SELECT sum(latency_ms)::BIGINT FROM tool_calls WHERE session_id = $ID)
FROM tool_calls WHERE session_id = $ID AND latency_ms IS NOT NULL ORDER BY latency_ms DESC, result_seq LIMIT 3`)
	if err != nil || len(rows) == 0 {
		return err
	}
	var out []slowRow
	for _, r := range rows {
		out = append(out, slowRow{tool: query.Text(r[0]), callID: query.Text(r[1]), resultSeq: query.Int(r[2]), latencyMS: query.Int(r[3]), status: query.Text(r[4])})
	}
	d.renderSlowTools(out, query.Int(rows[0][5]))
	return nil
}

func (d *diag) exit() error {
	rows, err := d.q(`SELECT seq, kind, coalesce(status, ''), coalesce(reason, ''), coalesce(tool, '') FROM events WHERE session_id = $ID
AND (kind IN ('session_finished', 'budget_exceeded', 'interrupted', 'error', 'evaluation')
  OR seq = (SELECT max(seq) FROM events WHERE session_id = $ID)) ORDER BY seq`)
	if err != nil || len(rows) == 0 {
		return err
	}
	var f exitFacts
	all := make([]exitRow, len(rows))
	for i, r := range rows {
		all[i] = exitRow{seq: query.Int(r[0]), kind: query.Text(r[1]), status: query.Text(r[2]), reason: query.Text(r[3]), tool: query.Text(r[4])}
		if all[i].kind == string(session.KindSessionFinished) {
			f.finished = append(f.finished, all[i])
		}
	}
	f.last = &all[len(all)-1]
	if len(all) > 1 {
		f.before = &all[len(all)-2]
	}
	d.renderExit(f)
	return nil
}

// WriteText prints the report for people.
func (r *Report) WriteText(w io.Writer) error {
	name := ""
	if r.Name != "" {
		name = " (" + r.Name + ")"
	}
	fmt.Fprintf(w, "session %s%s: %s after %d events, %d tokens, %d tool calls, $%.4f\n", r.SessionID, name, r.Status, r.Events, r.Tokens, r.ToolCalls, r.CostUSD)
	for _, f := range r.Findings {
		seqs := make([]string, len(f.Seqs))
		for i, s := range f.Seqs {
			seqs[i] = fmt.Sprint(s)
		}
		if _, err := fmt.Fprintf(w, "- %s: %s [seqs %s]\n", f.Kind, f.Text, strings.Join(seqs, " ")); err != nil {
			return err
		}
	}
	return nil
}

// label names a call for people: bash "make", else tool {args}.
func label(tool, args string) string {
	var a map[string]any
	if json.Unmarshal([]byte(args), &a) == nil && len(a) == 1 {
		if c, ok := a["command"].(string); ok {
			return fmt.Sprintf("%s %q", tool, excerpt(c, 60))
		}
	}
	if args == "" || args == "{}" {
		return tool
	}
	return tool + " " + excerpt(args, 60)
}

// excerpt is s on one line, cut to n bytes.
func excerpt(s string, n int) string {
	return clip.Bytes(strings.ReplaceAll(s, "\n", " "), n)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func pct(a, b int64) string {
	if b <= 0 {
		return "0%"
	}
	return fmt.Sprintf("%d%%", (a*100+b/2)/b)
}

func dur(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String()
}

func flt(v any) float64 {
	f, _ := query.Number(v)
	return f
}

func ints(v any) []int64 {
	l, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]int64, 0, len(l))
	for _, x := range l {
		out = append(out, query.Int(x))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
