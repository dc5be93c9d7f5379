package diagnose

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"

	"github.com/agentctl/agentctl/internal/session"
)

// The facts each finding rests on, and the one place each finding's text
// is made from them. Run gathers the facts with SQL over the views, Fold
// from the log read a record at a time; both render through these, so the
// two can differ only in the facts (TestStreamedIsSQL compares them).

// askRow is one tool call the model asked for (one row of asksSQL): its
// assistant message, the tokens of the model call that produced it and
// the (tool, args) key it repeats by; what became of it is
// loopFacts.result(ref). A call id that names several calls gives one row
// per call, as the SQL's join does. 32 bytes: a session of 238,095 calls
// holds 7.6 MB of them.
type askRow struct {
	seq, tokens int64
	key         uint64 // the hash of tool and args (askKey)
	ref         int32  // its result, for loopFacts.result
	n           int32  // its occurrence among the rows of its key, from 1
}

// keySeed hashes the keys of asks; the hashes are compared, never shown.
var keySeed = maphash.MakeSeed()

// askKey is the key identical calls share: the hash of the tool and the
// arguments (in asksSQL's json() form). Two distinct keys share a hash
// with odds of 2^-64 a pair.
func askKey(tool, args string) uint64 {
	var h maphash.Hash
	h.SetSeed(keySeed)
	h.WriteString(tool)
	h.WriteByte(0)
	h.WriteString(args)
	return h.Sum64()
}

// loopFacts are the asks in the order of asksSQL (seq, then call id),
// what became of each, and the tool and arguments of every key asked for
// more than once.
type loopFacts struct {
	asks  []askRow
	names map[uint64][2]string
	// result is the result seq of an ask's row and whether its status
	// is error (0 and false: not run).
	result func(ref int32) (resultSeq int64, failed bool)
}

func (d *diag) renderLoop(f loopFacts) {
	asks := f.asks
	// The occurrence number of each ask among identical calls, and how
	// many there are: a sort of indexes by key, not a map of keys, so a
	// session of 238,095 distinct calls costs ~1 MB here.
	idx := make([]int32, len(asks))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(asks[a].key, asks[b].key) })
	count := func(i int) int64 { // rows of asks[i]'s key
		lo, _ := slices.BinarySearchFunc(idx, asks[i].key, func(j int32, k uint64) int { return cmp.Compare(asks[j].key, k) })
		hi := lo
		for hi < len(idx) && asks[idx[hi]].key == asks[i].key {
			hi++
		}
		return int64(hi - lo)
	}
	for j := range idx {
		if j > 0 && asks[idx[j-1]].key == asks[idx[j]].key {
			asks[idx[j]].n = asks[idx[j-1]].n + 1
		} else {
			asks[idx[j]].n = 1
		}
	}
	// The first failed call that was asked for again later.
	var first *askRow
	var from int64
	for i := range asks {
		a := &asks[i]
		if rs, failed := f.result(a.ref); failed && (first == nil || rs < from) && count(i) > int64(a.n) {
			first, from = a, rs
		}
	}
	turnTokens := map[int64]int64{}
	times := map[uint64]int64{}
	var keys []uint64
	var seqs []int64
	for _, a := range asks {
		if a.n < 2 || a.seq < from {
			continue
		}
		turnTokens[a.seq] = a.tokens
		if times[a.key] == 0 {
			keys = append(keys, a.key)
		}
		times[a.key]++
		seqs = append(seqs, a.seq)
	}
	if len(keys) == 0 {
		return
	}
	var burnt int64
	for _, t := range turnTokens {
		burnt += t
	}
	var parts []string
	for _, k := range keys {
		n := f.names[k]
		parts = append(parts, fmt.Sprintf("%s ×%d", label(n[0], n[1]), times[k]))
	}
	what := fmt.Sprintf("repeating %d %s (%s)", len(keys), plural(len(keys), "command", "commands"), joinListed(parts, ", "))
	if first != nil {
		n := f.names[first.key]
		what += fmt.Sprintf(" after the first failed %s at seq %d", label(n[0], n[1]), from)
		seqs = append(seqs, from)
	}
	if d.rep.Tokens == 0 {
		// No usage recorded (a transcript that keeps none): no share
		// of tokens to give.
		d.add("loop", fmt.Sprintf("%d %s asked for a call already made: %s; no tokens were recorded.",
			len(turnTokens), plural(len(turnTokens), "turn", "turns"), what), seqs...)
		return
	}
	d.add("loop", fmt.Sprintf("%s of tokens (%d of %d) went to %s; %d %s asked for a call already made.",
		pct(burnt, d.rep.Tokens), burnt, d.rep.Tokens, what, len(turnTokens), plural(len(turnTokens), "turn", "turns")), seqs...)
}

// afterErrorFacts: the first error (an error event, a failed tool result
// or a failed model call) and the model calls after it.
type afterErrorFacts struct {
	seq             int64 // 0: no error
	kind, tool, msg string
	after, calls    int64
	minSeq, maxSeq  int64 // of the model calls after it
}

func (d *diag) renderAfterError(f afterErrorFacts) {
	if f.seq == 0 {
		return
	}
	what := f.kind
	if f.tool != "" {
		what = f.tool + " " + f.kind
	}
	if f.msg != "" {
		what += " (" + excerpt(f.msg, 60) + ")"
	}
	seqs := []int64{f.seq}
	if f.calls > 0 {
		seqs = append(seqs, f.minSeq, f.maxSeq)
	}
	d.add("after_error", fmt.Sprintf("%s of tokens (%d of %d, %d model %s) were spent after the first error, the %s at seq %d.",
		pct(f.after, d.rep.Tokens), f.after, d.rep.Tokens, f.calls, plural(int(f.calls), "call", "calls"), what, f.seq), seqs...)
}

// providerRow is an assistant message that refused or was cut at the
// output cap, or a model call that failed or was a retry.
type providerRow struct {
	seq                                     int64
	kind, refusal, finish, etype, msg, text string
	attempt                                 int64
}

// providerFacts: those rows by seq, and the model calls that read or
// wrote the cache.
type providerFacts struct {
	rows                   []providerRow
	cacheIn, read, written int64
	cacheSeqs              []int64
}

func (d *diag) renderProvider(f providerFacts) {
	var parts []string
	var seqs []int64
	for _, r := range f.rows {
		switch {
		case r.kind == string(session.KindAssistantMessage) && r.refusal != "":
			parts = append(parts, fmt.Sprintf("the model refused at seq %d: %q", r.seq, excerpt(r.refusal, 100)))
		case r.kind == string(session.KindAssistantMessage):
			parts = append(parts, fmt.Sprintf("the answer at seq %d was cut at the output cap (finish_reason %s)", r.seq, r.finish))
		case r.msg == "":
			continue // the successful last try of a retried call
		default:
			what := r.etype
			if what == "" {
				what = excerpt(r.msg, 80)
			}
			s := fmt.Sprintf("model call at seq %d failed: %s", r.seq, what)
			if r.attempt > 0 {
				s += fmt.Sprintf(" (try %d of the call)", r.attempt)
			}
			if r.text != "" {
				s += fmt.Sprintf(", after streaming %d characters (%q)", len([]rune(r.text)), excerpt(r.text, 40))
			}
			parts = append(parts, s)
		}
		seqs = append(seqs, r.seq)
	}
	if len(parts) > maxListed {
		parts = []string{joinListed(parts, "; ")}
	}
	if f.cacheIn > 0 {
		parts = append(parts, fmt.Sprintf("%d input tokens of the cached calls were cache reads (%s) and %d cache writes, billed and counted in the totals",
			f.read, pct(f.read, f.cacheIn), f.written))
		seqs = append(seqs, f.cacheSeqs...)
	}
	if len(parts) == 0 {
		return
	}
	text := strings.Join(parts, "; ")
	d.add("provider", strings.ToUpper(text[:1])+text[1:]+".", seqs...)
}

// budgetFacts: the budget in force at the end, the first and last seqs,
// the milliseconds between the earliest and the latest event, and the
// budget stops.
type budgetFacts struct {
	budget            session.Budget
	firstSeq, lastSeq int64
	ms                int64
	stops             []int64
	lastStopReason    string
}

func (d *diag) renderBudget(f budgetFacts) {
	mins := float64(f.ms) / 60000
	noUsage := slices.Contains(d.rep.NotRecorded, session.NotRecordedUsage)
	noTimes := slices.Contains(d.rep.NotRecorded, session.NotRecordedTimes)
	var b strings.Builder
	switch {
	case noUsage && noTimes:
		fmt.Fprintf(&b, "spent %d tool calls; the %s transcript records no tokens (so no cost) and no times", d.rep.ToolCalls, d.rep.ImportedFrom)
	case noUsage:
		fmt.Fprintf(&b, "spent %d tool calls in %s; the %s transcript records no tokens (so no cost)", d.rep.ToolCalls, dur(f.ms), d.rep.ImportedFrom)
		if mins > 0 {
			fmt.Fprintf(&b, " (%.1f tool calls/min)", float64(d.rep.ToolCalls)/mins)
		}
	case noTimes:
		fmt.Fprintf(&b, "spent %d tokens, %d tool calls and $%.4f; the %s transcript records no times", d.rep.Tokens, d.rep.ToolCalls, d.rep.CostUSD, d.rep.ImportedFrom)
	default:
		fmt.Fprintf(&b, "spent %d tokens, %d tool calls and $%.4f in %s", d.rep.Tokens, d.rep.ToolCalls, d.rep.CostUSD, dur(f.ms))
		if mins > 0 {
			fmt.Fprintf(&b, " (%.0f tokens/min, %.1f tool calls/min)", float64(d.rep.Tokens)/mins, float64(d.rep.ToolCalls)/mins)
		}
	}
	var limits []string
	bu := f.budget
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
	seqs := []int64{f.firstSeq, f.lastSeq}
	if len(f.stops) > 0 {
		fmt.Fprintf(&b, "; the budget stopped the run at seq %d: %s", f.stops[len(f.stops)-1], f.lastStopReason)
		seqs = append(seqs, f.stops...)
	}
	d.add("budget", "Spent"+strings.TrimPrefix(b.String(), "spent")+".", seqs...)
}

// pendingRow is a dispatched call with no result and no reconciliation
// naming its id; reconciledRow a reconciled event, with the first result
// or reconciliation of its call id after it (0: none).
type pendingRow struct {
	callID, tool, key string
	intentSeq         int64
}

type reconciledRow struct {
	seq                   int64
	callID, tool, outcome string
	later                 int64
}

func (d *diag) renderPending(pending []pendingRow, reconciled []reconciledRow) {
	if len(pending) > 0 {
		var parts []string
		var seqs []int64
		for _, r := range pending {
			key := ""
			if r.key != "" {
				key = ", key " + r.key
			}
			parts = append(parts, fmt.Sprintf("%s %s (seq %d%s)", r.tool, r.callID, r.intentSeq, key))
			seqs = append(seqs, r.intentSeq)
		}
		how := "the effect may or may not have happened, and resume reconciles it before anything else runs"
		if d.rep.ImportedFrom != "" {
			how = "the " + d.rep.ImportedFrom + " transcript records no result for it"
		}
		d.add("pending", fmt.Sprintf("%d pending %s: %s; %s.",
			len(pending), plural(len(pending), "intent", "intents"), joinListed(parts, ", "), how), seqs...)
	}
	var parts []string
	var seqs []int64
	human := 0
	for _, r := range reconciled {
		s := fmt.Sprintf("%s %s %s at seq %d", r.tool, r.callID, r.outcome, r.seq)
		seqs = append(seqs, r.seq)
		if r.outcome == session.ReconciledNeedsHuman {
			human++
			if r.later > 0 {
				s += fmt.Sprintf(" (resolved at seq %d)", r.later)
				seqs = append(seqs, r.later)
			} else {
				s += " (still waiting for 'agentctl resolve')"
			}
		}
		parts = append(parts, s)
	}
	if len(parts) > 0 {
		d.add("pending", fmt.Sprintf("Resume reconciled %d %s (%d needs_human): %s.", len(parts), plural(len(parts), "intent", "intents"), human, joinListed(parts, "; ")), seqs...)
	}
}

// approvalRow is an approval request and the first decision on its call
// id after it (decision 0: none yet).
type approvalRow struct {
	seq, decision, waitedMS int64
	callID, tool, verdict   string // verdict: the decision's kind
}

func (d *diag) renderApprovals(rows []approvalRow) {
	if len(rows) == 0 {
		return
	}
	var parts []string
	var seqs []int64
	var waited int64
	open := 0
	for _, r := range rows {
		seqs = append(seqs, r.seq)
		if r.decision == 0 {
			open++
			parts = append(parts, fmt.Sprintf("%s %s (seq %d) still waits", r.tool, r.callID, r.seq))
			continue
		}
		seqs = append(seqs, r.decision)
		waited += r.waitedMS
		verb := strings.TrimPrefix(r.verdict, "approval_")
		parts = append(parts, fmt.Sprintf("%s %s (seq %d) %s after %s (seq %d)", r.tool, r.callID, r.seq, verb, dur(r.waitedMS), r.decision))
	}
	d.add("approvals", fmt.Sprintf("%d approval %s, %s waited in all, %d unanswered: %s.", len(rows), plural(len(rows), "request", "requests"),
		dur(waited), open, joinListed(parts, "; ")), seqs...)
}

// renderCompactions: seqs are the compactions', through the last one's.
func (d *diag) renderCompactions(seqs []int64, through int64) {
	if len(seqs) == 0 {
		return
	}
	rep := d.anchors
	text := fmt.Sprintf("%d %s (last through seq %d)", len(seqs), plural(len(seqs), "compaction", "compactions"), through)
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
	d.add("compaction", text, append([]int64(nil), seqs...)...)
}

// slowRow is a tool call with a latency; slowest holds the three slowest
// (latency, then result seq), total the latencies' sum over every call.
type slowRow struct {
	tool, callID, status string
	resultSeq, latencyMS int64
}

func (d *diag) renderSlowTools(slowest []slowRow, total int64) {
	if len(slowest) == 0 {
		return
	}
	var parts []string
	var seqs []int64
	for _, r := range slowest {
		parts = append(parts, fmt.Sprintf("%s %s %s (%s, seq %d)", r.tool, r.callID, dur(r.latencyMS), r.status, r.resultSeq))
		seqs = append(seqs, r.resultSeq)
	}
	d.add("slow_tools", fmt.Sprintf("Slowest tools (%s in tools in all): %s.", dur(total), strings.Join(parts, "; ")), seqs...)
}

// slower orders slow rows: the slowest first, then by result seq.
func slower(a, b slowRow) int {
	if c := cmp.Compare(b.latencyMS, a.latencyMS); c != 0 {
		return c
	}
	return cmp.Compare(a.resultSeq, b.resultSeq)
}

// exitRow is an event of the exit path: a session_finished,
// budget_exceeded, interrupted, error or evaluation, or the last event.
type exitRow struct {
	seq                        int64
	kind, status, reason, tool string
}

// exitFacts: every session_finished, the last event and the exit-path
// event before it (nil when there is none).
type exitFacts struct {
	finished []exitRow
	last     *exitRow
	before   *exitRow
}

func (d *diag) renderExit(f exitFacts) {
	if f.last == nil {
		return
	}
	var path []string
	var seqs []int64
	for _, r := range f.finished {
		s := fmt.Sprintf("finished %s at seq %d", r.status, r.seq)
		if r.reason != "" {
			s += " (" + excerpt(r.reason, 80) + ")"
		}
		path = append(path, s)
		seqs = append(seqs, r.seq)
	}
	if n := len(path) - maxListed; n > 0 {
		// The end is what explains the exit: the earliest runs are counted.
		path = append([]string{fmt.Sprintf("%d earlier %s", n, plural(n, "run", "runs"))}, path[n:]...)
	}
	last := f.last
	var text string
	if last.kind != string(session.KindSessionFinished) {
		what := last.kind
		if last.tool != "" {
			what += " " + last.tool
		}
		text = fmt.Sprintf("the log ends at seq %d (%s) with no session_finished: the process died there (crash, kill, lost machine) or is still running; 'agentctl resume' continues it", last.seq, what)
		if d.rep.ImportedFrom != "" {
			end := "records no end state"
			if d.rep.SourceStatus != "" {
				end = "recorded the end state " + strconv.Quote(d.rep.SourceStatus)
			}
			text = fmt.Sprintf("imported from %s, whose transcript %s; the log ends at seq %d (%s) with no session_finished because the run happened there, not in agentctl: there is nothing to resume ('agentctl replay fork' continues it)",
				d.rep.ImportedFrom, end, last.seq, what)
		}
		seqs = append(seqs, last.seq)
		if len(path) > 0 {
			text = strings.Join(path, ", resumed, then ") + "; then " + text
		}
	} else {
		text = strings.Join(path, ", resumed, then ")
		// The cause just before the final finish.
		if b := f.before; b != nil && b.kind != string(session.KindSessionFinished) {
			cause := b.kind
			if b.status != "" {
				cause += " " + b.status
			}
			text += fmt.Sprintf(", after %s at seq %d", cause, b.seq)
			seqs = append(seqs, b.seq)
		}
	}
	d.add("exit", strings.ToUpper(text[:1])+text[1:]+".", seqs...)
}

// isExitKind reports whether an event of kind k is on the exit path.
func isExitKind(k session.Kind) bool {
	switch k {
	case session.KindSessionFinished, session.KindBudgetExceeded, session.KindInterrupted, session.KindError, session.KindEvaluation:
		return true
	}
	return false
}
