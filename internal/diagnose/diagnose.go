// Package diagnose writes the postmortem of one session in plain words,
// from canned SQL queries over the query package's views (events,
// sessions, tool_calls), so it reads a home and a debug bundle alike.
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
package diagnose

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

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
	ImportedFrom string    `json:"imported_from,omitempty"`
	SourceStatus string    `json:"source_status,omitempty"`
	Findings     []Finding `json:"findings"`
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
// compactions whose anchoring failed); the rest are counted.
const maxListed = 5

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
	d.rep.Name, d.rep.Status, d.rep.Events, d.rep.Tokens = str(r[0]), str(r[1]), num(r[2]), num(r[3])
	d.rep.CostUSD, d.rep.ToolCalls = flt(r[4]), num(r[5])
	d.rep.ImportedFrom, d.rep.SourceStatus = str(r[6]), str(r[7])
	return nil
}

// asksSQL lists every tool call the model asked for, with the tokens of the
// model call that produced it, its occurrence number among identical calls
// (same tool, same compact arguments) and what became of it.
const asksSQL = `WITH ev AS (SELECT * FROM events WHERE session_id = $ID),
asks AS (
  SELECT a.seq, u.c.id AS call_id, u.c.name AS tool, coalesce(CAST(json(u.c.args) AS VARCHAR), '') AS args,
    coalesce(m.input_tokens + m.output_tokens, a.input_tokens + a.output_tokens, 0) AS tokens
  FROM ev a LEFT JOIN ev m ON m.seq = a.seq + 1 AND m.kind = 'model_call',
    unnest(from_json(a.tool_calls, '[{"id":"VARCHAR","name":"VARCHAR","args":"JSON"}]')) AS u(c)
  WHERE a.kind = 'assistant_message' AND a.tool_calls IS NOT NULL
)
SELECT k.seq, k.call_id, k.tool, k.args, k.tokens::BIGINT,
  row_number() OVER (PARTITION BY k.tool, k.args ORDER BY k.seq, k.call_id) AS n,
  t.result_seq, coalesce(t.status, 'not run') AS status
FROM asks k LEFT JOIN tool_calls t ON t.session_id = $ID AND t.call_id = k.call_id
ORDER BY k.seq, k.call_id`

type ask struct {
	seq, tokens, n, resultSeq int64
	callID, tool, args        string
	status                    string
}

func (a ask) key() string { return a.tool + "\x00" + a.args }

func (d *diag) loop() error {
	rows, err := d.q(asksSQL)
	if err != nil {
		return err
	}
	var asks []ask
	count := map[string]int64{}
	for _, r := range rows {
		a := ask{seq: num(r[0]), callID: str(r[1]), tool: str(r[2]), args: str(r[3]), tokens: num(r[4]), n: num(r[5]), resultSeq: num(r[6]), status: str(r[7])}
		asks = append(asks, a)
		count[a.key()]++
	}
	// The first failed call that was asked for again later.
	var first *ask
	for i := range asks {
		a := &asks[i]
		if a.status == "error" && count[a.key()] > a.n && (first == nil || a.resultSeq < first.resultSeq) {
			first = a
		}
	}
	from := int64(0)
	if first != nil {
		from = first.resultSeq
	}
	turnTokens := map[int64]int64{}
	times := map[string]int64{}
	var keys []string
	var seqs []int64
	for _, a := range asks {
		if a.n < 2 || a.seq < from {
			continue
		}
		turnTokens[a.seq] = a.tokens
		if times[a.key()] == 0 {
			keys = append(keys, a.key())
		}
		times[a.key()]++
		seqs = append(seqs, a.seq)
	}
	if len(keys) == 0 {
		return nil
	}
	var burnt int64
	for _, t := range turnTokens {
		burnt += t
	}
	var parts []string
	for _, k := range keys {
		tool, args, _ := strings.Cut(k, "\x00")
		parts = append(parts, fmt.Sprintf("%s ×%d", label(tool, args), times[k]))
	}
	what := fmt.Sprintf("repeating %d %s (%s)", len(keys), plural(len(keys), "command", "commands"), strings.Join(parts, ", "))
	if first != nil {
		what += fmt.Sprintf(" after the first failed %s at seq %d", label(first.tool, first.args), first.resultSeq)
		seqs = append(seqs, first.resultSeq)
	}
	d.add("loop", fmt.Sprintf("%s of tokens (%d of %d) went to %s; %d %s asked for a call already made.",
		pct(burnt, d.rep.Tokens), burnt, d.rep.Tokens, what, len(turnTokens), plural(len(turnTokens), "turn", "turns")), seqs...)
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
	seq, kind, tool, msg, after, calls := num(r[0]), str(r[1]), str(r[2]), str(r[3]), num(r[4]), num(r[5])
	what := kind
	if tool != "" {
		what = tool + " " + kind
	}
	if msg != "" {
		what += " (" + clip(msg, 60) + ")"
	}
	seqs := []int64{seq}
	if calls > 0 {
		seqs = append(seqs, num(r[6]), num(r[7]))
	}
	d.add("after_error", fmt.Sprintf("%s of tokens (%d of %d, %d model %s) were spent after the first error, the %s at seq %d.",
		pct(after, d.rep.Tokens), after, d.rep.Tokens, calls, plural(int(calls), "call", "calls"), what, seq), seqs...)
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
	var parts []string
	var seqs []int64
	for _, r := range rows {
		seq, kind := num(r[0]), str(r[1])
		refusal, finish, etype, msg, text, attempt := str(r[2]), str(r[3]), str(r[4]), str(r[5]), str(r[6]), num(r[7])
		switch {
		case kind == string(session.KindAssistantMessage) && refusal != "":
			parts = append(parts, fmt.Sprintf("the model refused at seq %d: %q", seq, clip(refusal, 100)))
		case kind == string(session.KindAssistantMessage):
			parts = append(parts, fmt.Sprintf("the answer at seq %d was cut at the output cap (finish_reason %s)", seq, finish))
		case msg == "":
			continue // the successful last try of a retried call
		default:
			what := etype
			if what == "" {
				what = clip(msg, 80)
			}
			s := fmt.Sprintf("model call at seq %d failed: %s", seq, what)
			if attempt > 0 {
				s += fmt.Sprintf(" (try %d of the call)", attempt)
			}
			if text != "" {
				s += fmt.Sprintf(", after streaming %d characters (%q)", len([]rune(text)), clip(text, 40))
			}
			parts = append(parts, s)
		}
		seqs = append(seqs, seq)
	}
	cache, err := d.q(`SELECT coalesce(sum(input_tokens), 0)::BIGINT, coalesce(sum(cache_read_input_tokens), 0)::BIGINT,
  coalesce(sum(cache_creation_input_tokens), 0)::BIGINT, list(seq ORDER BY seq)
FROM events WHERE session_id = $ID AND kind = 'model_call' AND (cache_read_input_tokens > 0 OR cache_creation_input_tokens > 0)`)
	if err != nil {
		return err
	}
	if len(cache) > 0 && num(cache[0][0]) > 0 {
		in, read, write := num(cache[0][0]), num(cache[0][1]), num(cache[0][2])
		parts = append(parts, fmt.Sprintf("%d input tokens of the cached calls were cache reads (%s) and %d cache writes, billed and counted in the totals",
			read, pct(read, in), write))
		seqs = append(seqs, ints(cache[0][3])...)
	}
	if len(parts) == 0 {
		return nil
	}
	text := strings.Join(parts, "; ")
	d.add("provider", strings.ToUpper(text[:1])+text[1:]+".", seqs...)
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
	_ = json.Unmarshal([]byte(str(r[0])), &sp)
	if changes, ok := r[6].([]any); ok {
		for _, c := range changes {
			_ = sp.Budget.Apply(json.RawMessage(str(c)))
		}
	}
	firstSeq, lastSeq, ms := num(r[1]), num(r[2]), num(r[3])
	mins := float64(ms) / 60000
	var b strings.Builder
	fmt.Fprintf(&b, "spent %d tokens, %d tool calls and $%.4f in %s", d.rep.Tokens, d.rep.ToolCalls, d.rep.CostUSD, dur(ms))
	if mins > 0 {
		fmt.Fprintf(&b, " (%.0f tokens/min, %.1f tool calls/min)", float64(d.rep.Tokens)/mins, float64(d.rep.ToolCalls)/mins)
	}
	var limits []string
	bu := sp.Budget
	if bu.MaxTokens > 0 {
		limits = append(limits, fmt.Sprintf("tokens %d/%d (%s)", d.rep.Tokens, bu.MaxTokens, pct(d.rep.Tokens, bu.MaxTokens)))
	}
	if bu.MaxToolCalls > 0 {
		limits = append(limits, fmt.Sprintf("tool calls %d/%d (%s)", d.rep.ToolCalls, bu.MaxToolCalls, pct(d.rep.ToolCalls, bu.MaxToolCalls)))
	}
	if bu.MaxCostUSD > 0 {
		limits = append(limits, fmt.Sprintf("cost $%.4f/$%.4f", d.rep.CostUSD, bu.MaxCostUSD))
	}
	if bu.MaxWall > 0 {
		limits = append(limits, "wall "+bu.MaxWall.String())
	}
	if len(limits) > 0 {
		fmt.Fprintf(&b, "; limits: %s", strings.Join(limits, ", "))
	}
	seqs := []int64{firstSeq, lastSeq}
	if stops := ints(r[4]); len(stops) > 0 {
		fmt.Fprintf(&b, "; the budget stopped the run at seq %d: %s", stops[len(stops)-1], str(r[5]))
		seqs = append(seqs, stops...)
	}
	d.add("budget", "Spent"+strings.TrimPrefix(b.String(), "spent")+".", seqs...)
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
	if len(rows) > 0 {
		var parts []string
		var seqs []int64
		for _, r := range rows {
			parts = append(parts, fmt.Sprintf("%s %s (seq %d, key %s)", str(r[1]), str(r[0]), num(r[2]), str(r[3])))
			seqs = append(seqs, num(r[2]))
		}
		how := "the effect may or may not have happened, and resume reconciles it before anything else runs"
		if d.rep.ImportedFrom != "" {
			how = "the " + d.rep.ImportedFrom + " transcript records no result for it"
		}
		d.add("pending", fmt.Sprintf("%d pending %s: %s; %s.",
			len(rows), plural(len(rows), "intent", "intents"), strings.Join(parts, ", "), how), seqs...)
	}
	rows, err = d.q(`WITH ev AS (SELECT * FROM events WHERE session_id = $ID)
SELECT r.seq, r.call_id, coalesce(r.tool, ''), r.outcome,
  (SELECT min(x.seq) FROM ev x WHERE x.call_id = r.call_id AND x.seq > r.seq AND x.kind IN ('tool_result', 'reconciled'))
FROM ev r WHERE r.kind = 'reconciled' ORDER BY r.seq`)
	if err != nil {
		return err
	}
	var parts []string
	var seqs []int64
	human := 0
	for _, r := range rows {
		s := fmt.Sprintf("%s %s %s at seq %d", str(r[2]), str(r[1]), str(r[3]), num(r[0]))
		seqs = append(seqs, num(r[0]))
		if str(r[3]) == session.ReconciledNeedsHuman {
			human++
			if later := num(r[4]); later > 0 {
				s += fmt.Sprintf(" (resolved at seq %d)", later)
				seqs = append(seqs, later)
			} else {
				s += " (still waiting for 'agentctl resolve')"
			}
		}
		parts = append(parts, s)
	}
	if len(parts) > 0 {
		d.add("pending", fmt.Sprintf("Resume reconciled %d %s (%d needs_human): %s.", len(parts), plural(len(parts), "intent", "intents"), human, strings.Join(parts, "; ")), seqs...)
	}
	return nil
}

func (d *diag) approvals() error {
	rows, err := d.q(`WITH ev AS (SELECT * FROM events WHERE session_id = $ID)
SELECT r.seq, r.call_id, coalesce(r.tool, ''), min(x.seq), arg_min(x.kind, x.seq), date_diff('millisecond', r.ts, arg_min(x.ts, x.seq))
FROM ev r LEFT JOIN ev x ON x.call_id = r.call_id AND x.seq > r.seq AND x.kind IN ('approval_granted', 'approval_denied')
WHERE r.kind = 'approval_request' GROUP BY r.seq, r.call_id, r.tool, r.ts ORDER BY r.seq`)
	if err != nil || len(rows) == 0 {
		return err
	}
	var parts []string
	var seqs []int64
	var waited int64
	open := 0
	for _, r := range rows {
		seqs = append(seqs, num(r[0]))
		if r[3] == nil {
			open++
			parts = append(parts, fmt.Sprintf("%s %s (seq %d) still waits", str(r[2]), str(r[1]), num(r[0])))
			continue
		}
		seqs = append(seqs, num(r[3]))
		waited += num(r[5])
		verb := strings.TrimPrefix(str(r[4]), "approval_")
		parts = append(parts, fmt.Sprintf("%s %s (seq %d) %s after %s (seq %d)", str(r[2]), str(r[1]), num(r[0]), verb, dur(num(r[5])), num(r[3])))
	}
	d.add("approvals", fmt.Sprintf("%d approval %s, %s waited in all, %d unanswered: %s.", len(rows), plural(len(rows), "request", "requests"),
		dur(waited), open, strings.Join(parts, "; ")), seqs...)
	return nil
}

func (d *diag) compactions() error {
	rows, err := d.q(`SELECT seq, through FROM events WHERE session_id = $ID AND kind = 'compaction' ORDER BY seq`)
	if err != nil || len(rows) == 0 {
		return err
	}
	var seqs []int64
	for _, r := range rows {
		seqs = append(seqs, num(r[0]))
	}
	rep := d.anchors
	text := fmt.Sprintf("%d %s (last through seq %d)", len(rows), plural(len(rows), "compaction", "compactions"), num(rows[len(rows)-1][1]))
	if rep.OK {
		text += "; the goal survived: the first user message is held verbatim after each, and every summary was made from original events."
	} else {
		// The first few failures in words, the rest counted by code.
		var bad, codes []string
		byCode := map[string]int{}
		total := 0
		for _, c := range rep.Compactions {
			for _, f := range c.Findings {
				total++
				if len(bad) < maxListed {
					bad = append(bad, fmt.Sprintf("seq %d %s: %s", c.Seq, f.Code, f.Detail))
					continue
				}
				if byCode[f.Code] == 0 {
					codes = append(codes, f.Code)
				}
				byCode[f.Code]++
			}
		}
		text += "; the goal may be lost: " + strings.Join(bad, "; ")
		if more := total - len(bad); more > 0 {
			var counts []string
			for _, c := range codes {
				counts = append(counts, fmt.Sprintf("%d %s", byCode[c], c))
			}
			text += fmt.Sprintf("; and %d more (%s)", more, strings.Join(counts, ", "))
		}
		text += "."
	}
	d.add("compaction", text, seqs...)
	return nil
}

func (d *diag) slowTools() error {
	rows, err := d.q(`SELECT tool, call_id, result_seq, latency_ms, status, (SELECT sum(latency_ms)::BIGINT FROM tool_calls WHERE session_id = $ID)
FROM tool_calls WHERE session_id = $ID AND latency_ms IS NOT NULL ORDER BY latency_ms DESC, result_seq LIMIT 3`)
	if err != nil || len(rows) == 0 {
		return err
	}
	var parts []string
	var seqs []int64
	for _, r := range rows {
		parts = append(parts, fmt.Sprintf("%s %s %s (%s, seq %d)", str(r[0]), str(r[1]), dur(num(r[3])), str(r[4]), num(r[2])))
		seqs = append(seqs, num(r[2]))
	}
	d.add("slow_tools", fmt.Sprintf("Slowest tools (%s in tools in all): %s.", dur(num(rows[0][5])), strings.Join(parts, "; ")), seqs...)
	return nil
}

func (d *diag) exit() error {
	rows, err := d.q(`SELECT seq, kind, coalesce(status, ''), coalesce(reason, ''), coalesce(tool, '') FROM events WHERE session_id = $ID
AND (kind IN ('session_finished', 'budget_exceeded', 'interrupted', 'error', 'evaluation')
  OR seq = (SELECT max(seq) FROM events WHERE session_id = $ID)) ORDER BY seq`)
	if err != nil || len(rows) == 0 {
		return err
	}
	var path []string
	var seqs []int64
	for _, r := range rows {
		if str(r[1]) != string(session.KindSessionFinished) {
			continue
		}
		s := fmt.Sprintf("finished %s at seq %d", str(r[2]), num(r[0]))
		if reason := str(r[3]); reason != "" {
			s += " (" + clip(reason, 80) + ")"
		}
		path = append(path, s)
		seqs = append(seqs, num(r[0]))
	}
	last := rows[len(rows)-1]
	var text string
	if str(last[1]) != string(session.KindSessionFinished) {
		what := str(last[1])
		if t := str(last[4]); t != "" {
			what += " " + t
		}
		text = fmt.Sprintf("the log ends at seq %d (%s) with no session_finished: the process died there (crash, kill, lost machine) or is still running; 'agentctl resume' continues it", num(last[0]), what)
		if d.rep.ImportedFrom != "" {
			end := "records no end state"
			if d.rep.SourceStatus != "" {
				end = "recorded the end state " + strconv.Quote(d.rep.SourceStatus)
			}
			text = fmt.Sprintf("imported from %s, whose transcript %s; the log ends at seq %d (%s) with no session_finished because the run happened there, not in agentctl: there is nothing to resume ('agentctl replay fork' continues it)",
				d.rep.ImportedFrom, end, num(last[0]), what)
		}
		seqs = append(seqs, num(last[0]))
		if len(path) > 0 {
			text = strings.Join(path, ", resumed, then ") + "; then " + text
		}
	} else {
		text = strings.Join(path, ", resumed, then ")
		// The cause just before the final finish.
		for i := len(rows) - 2; i >= 0; i-- {
			k := str(rows[i][1])
			if k == string(session.KindSessionFinished) {
				break
			}
			cause := k
			if x := str(rows[i][2]); x != "" {
				cause += " " + x
			}
			text += fmt.Sprintf(", after %s at seq %d", cause, num(rows[i][0]))
			seqs = append(seqs, num(rows[i][0]))
			break
		}
	}
	d.add("exit", strings.ToUpper(text[:1])+text[1:]+".", seqs...)
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
			return fmt.Sprintf("%s %q", tool, clip(c, 60))
		}
	}
	if args == "" || args == "{}" {
		return tool
	}
	return tool + " " + clip(args, 60)
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
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

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

func num(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case uint64:
		return int64(x)
	case float64:
		return int64(x)
	case *big.Int:
		return x.Int64()
	}
	return 0
}

func flt(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	}
	return float64(num(v))
}

func ints(v any) []int64 {
	l, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]int64, 0, len(l))
	for _, x := range l {
		out = append(out, num(x))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
