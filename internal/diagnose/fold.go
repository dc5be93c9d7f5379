package diagnose

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentctl/agentctl/internal/recorder"
	replaycheck "github.com/agentctl/agentctl/internal/replay/check"
	"github.com/agentctl/agentctl/internal/session"
)

// Fold diagnoses one session from its log read a record at a time, with
// no SQL: `agentctl view` and `diagnose SESSION` of a local session use
// it, so a session of a million events is diagnosed in the memory of its
// lean fold (session.NewLeanState, ~30 MB for 238,095 calls) and a few
// words a tool call, where the views' DuckDB plan held ~1.6 GB. The
// figures and calls are session.State's; what Fold adds is what a finding
// lists of the events themselves. Its report is Run's, exactly, for every
// session the tests make (TestStreamedIsSQL); Run stays for bundles and
// for reading many sessions.
//
// Add the events in log order, then call Report once.
type Fold struct {
	id string
	st *session.State

	asks   []askRow
	seen   keySet               // keys asked for
	names  map[uint64][2]string // keys asked for more than once
	reused map[string]bool      // call ids asked for while a call had them
	turn   struct {             // the latest assistant message
		seq  int64
		from int // its first ask
	}

	ae   afterErrorFacts
	prov providerFacts

	firstSeq, lastSeq int64
	minTS, maxTS      time.Time
	stops             []int64
	stopReason        string

	reconciledIDs map[string]bool
	reconciled    []reconciledRow
	waitRecon     map[string][]int
	approvals     []approvalRow
	approvalTS    []time.Time
	waitApproval  map[string][]int

	compactions []int64
	through     int64

	finished []exitRow
	exitRows [2]exitRow // the latest two exit-path events, [1] the latest
	nExit    int
	last     exitRow
}

// NewFold returns an empty diagnosis of session id.
func NewFold(id string) *Fold {
	return &Fold{id: id, st: session.NewLeanState(), names: map[uint64][2]string{},
		reused: map[string]bool{}, reconciledIDs: map[string]bool{}, waitRecon: map[string][]int{}, waitApproval: map[string][]int{}}
}

// Add folds one event.
func (f *Fold) Add(e session.Event) {
	if f.st.Events == 0 || e.Seq < f.firstSeq {
		f.firstSeq = e.Seq
	}
	f.lastSeq = max(f.lastSeq, e.Seq)
	ts := e.TS.Truncate(time.Microsecond) // as the views hold it
	if f.minTS.IsZero() || ts.Before(f.minTS) {
		f.minTS = ts
	}
	if ts.After(f.maxTS) {
		f.maxTS = ts
	}
	// The model call just after an assistant message paid for its calls
	// (asksSQL's join on seq + 1); a zero count is NULL there.
	if t := &f.turn; t.seq > 0 && e.Seq == t.seq+1 && e.Kind == session.KindModelCall && e.InputTokens != 0 && e.OutputTokens != 0 {
		for i := t.from; i < len(f.asks); i++ {
			f.asks[i].tokens = e.InputTokens + e.OutputTokens
		}
	}
	if e.Kind == session.KindAssistantMessage && len(e.ToolCalls) > 0 {
		// An id asked for again, here or before, joins every call it named.
		for i, c := range e.ToolCalls {
			_, ok := f.st.CallIndex(c.ID)
			if ok || slices.ContainsFunc(e.ToolCalls[:i], func(d session.ToolCall) bool { return d.ID == c.ID }) {
				f.reused[c.ID] = true
			}
		}
	}
	f.st.Add(e)
	switch e.Kind {
	case session.KindAssistantMessage:
		f.ask(e)
		if e.Refusal != "" || e.FinishReason == "length" {
			f.prov.rows = append(f.prov.rows, providerRow{seq: e.Seq, kind: string(e.Kind), refusal: e.Refusal, finish: e.FinishReason,
				etype: e.ErrorType, msg: e.Error, text: e.Text, attempt: e.Attempt})
		}
	case session.KindModelCall:
		if f.ae.seq > 0 && e.Seq > f.ae.seq {
			f.ae.after += e.InputTokens + e.OutputTokens
			f.ae.calls++
			if f.ae.calls == 1 {
				f.ae.minSeq = e.Seq
			}
			f.ae.maxSeq = e.Seq
		}
		if e.Error != "" || e.Attempt > 1 {
			f.prov.rows = append(f.prov.rows, providerRow{seq: e.Seq, kind: string(e.Kind), refusal: e.Refusal, finish: e.FinishReason,
				etype: e.ErrorType, msg: e.Error, text: e.Text, attempt: e.Attempt})
		}
		if e.CacheReadInputTokens > 0 || e.CacheCreationInputTokens > 0 {
			f.prov.cacheIn += e.InputTokens
			f.prov.read += e.CacheReadInputTokens
			f.prov.written += e.CacheCreationInputTokens
			f.prov.cacheSeqs = append(f.prov.cacheSeqs, e.Seq)
		}
	case session.KindBudgetExceeded:
		f.stops = append(f.stops, e.Seq)
		if e.Reason != "" { // arg_max skips a NULL reason
			f.stopReason = e.Reason
		}
	case session.KindToolResult:
		f.resolveReconciled(e)
	case session.KindReconciled:
		f.resolveReconciled(e)
		f.reconciledIDs[e.CallID] = true
		f.waitRecon[e.CallID] = append(f.waitRecon[e.CallID], len(f.reconciled))
		f.reconciled = append(f.reconciled, reconciledRow{seq: e.Seq, callID: e.CallID, tool: e.Tool, outcome: e.Outcome})
	case session.KindApprovalRequest:
		f.waitApproval[e.CallID] = append(f.waitApproval[e.CallID], len(f.approvals))
		f.approvals = append(f.approvals, approvalRow{seq: e.Seq, callID: e.CallID, tool: e.Tool})
		f.approvalTS = append(f.approvalTS, ts)
	case session.KindApprovalGranted, session.KindApprovalDenied:
		if e.CallID == "" { // a NULL id joins nothing
			break
		}
		for _, i := range f.waitApproval[e.CallID] {
			a := &f.approvals[i]
			if e.Seq > a.seq {
				a.decision, a.verdict, a.waitedMS = e.Seq, string(e.Kind), ts.UnixMilli()-f.approvalTS[i].UnixMilli()
			}
		}
		delete(f.waitApproval, e.CallID)
	case session.KindCompaction:
		f.compactions = append(f.compactions, e.Seq)
		f.through = e.Through
	}
	if f.ae.seq == 0 && (e.Kind == session.KindError || (e.Kind == session.KindToolResult && e.Status == session.ResultError) ||
		(e.Kind == session.KindModelCall && e.Error != "")) {
		f.ae = afterErrorFacts{seq: e.Seq, kind: string(e.Kind), tool: e.Tool, msg: e.Error}
	}
	row := exitRow{seq: e.Seq, kind: string(e.Kind), status: e.Status, reason: e.Reason, tool: e.Tool}
	if isExitKind(e.Kind) {
		f.exitRows[0], f.exitRows[1] = f.exitRows[1], row
		f.nExit++
		if e.Kind == session.KindSessionFinished {
			f.finished = append(f.finished, row)
		}
	}
	f.last = row
}

// ask records the calls of assistant message e, by call id as asksSQL
// orders them, with the tokens of the message itself until the model
// call after it says otherwise.
func (f *Fold) ask(e session.Event) {
	var tokens int64
	if e.InputTokens != 0 && e.OutputTokens != 0 {
		tokens = e.InputTokens + e.OutputTokens
	}
	f.turn.seq, f.turn.from = e.Seq, len(f.asks)
	for i, c := range e.ToolCalls {
		args := sqlJSON(c.Args)
		k := askKey(c.Name, args)
		if !f.seen.add(k) {
			if _, ok := f.names[k]; !ok {
				f.names[k] = [2]string{c.Name, args}
			}
		}
		f.asks = append(f.asks, askRow{seq: e.Seq, tokens: tokens, key: k, ref: int32(f.st.Latest[i])})
	}
	mine := f.asks[f.turn.from:]
	ids := e.ToolCalls
	idx := make([]int, len(mine))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(ids[a].ID, ids[b].ID) })
	sorted := make([]askRow, len(mine))
	for i, j := range idx {
		sorted[i] = mine[j]
	}
	copy(mine, sorted)
}

// resolveReconciled gives the reconciliations still waiting on e's call
// id their later result or reconciliation.
func (f *Fold) resolveReconciled(e session.Event) {
	if e.CallID == "" { // a NULL id joins nothing
		return
	}
	for _, i := range f.waitRecon[e.CallID] {
		if r := &f.reconciled[i]; e.Seq > r.seq {
			r.later = e.Seq
		}
	}
	delete(f.waitRecon, e.CallID)
}

// Report renders the diagnosis. live and corrupt are what the log cannot
// say about itself (session.State's Live and Corrupt: a process holds the
// lease; reading stopped at damage); anchors is the anchoring check of
// its compactions, as Run's.
func (f *Fold) Report(live, corrupt bool, anchors replaycheck.AnchorsReport) (*Report, error) {
	st := f.st
	if st.Events == 0 {
		return nil, fmt.Errorf("diagnose: session %s has no events", f.id)
	}
	st.Live, st.Corrupt = live, corrupt
	d := &diag{id: f.id, rep: &Report{SessionID: f.id, Findings: []Finding{}}, anchors: anchors}
	r := d.rep
	r.Name, r.Status, r.Events, r.Tokens = st.Name, string(st.Status()), st.Events, st.Tokens()
	r.CostUSD, r.ToolCalls = st.CostUSD, st.ToolCalls
	r.ImportedFrom, r.SourceStatus, r.NotRecorded = st.ImportedFrom, st.SourceStatus, st.NotRecorded

	d.renderLoop(f.loopFacts())
	d.renderAfterError(f.ae)
	d.renderProvider(f.prov)
	d.renderBudget(budgetFacts{budget: st.Budget, firstSeq: f.firstSeq, lastSeq: f.lastSeq,
		ms: f.maxTS.UnixMilli() - f.minTS.UnixMilli(), stops: f.stops, lastStopReason: f.stopReason})

	// One pass over the calls with a row in the tool_calls view.
	var pending []pendingRow
	var slowest []slowRow
	var total int64
	for c := range st.DispatchedCalls() {
		out := c.Outcome()
		if out == "pending" && !f.reconciledIDs[c.ID] {
			pending = append(pending, pendingRow{callID: c.ID, tool: c.Tool, intentSeq: c.IntentSeq, key: c.IdempotencyKey})
		}
		if c.LatencyMS != 0 {
			total += c.LatencyMS
			row := slowRow{tool: c.Tool, callID: c.ID, status: out, resultSeq: c.ResultSeq, latencyMS: c.LatencyMS}
			at, _ := slices.BinarySearchFunc(slowest, row, slower)
			if at < 3 {
				slowest = slices.Insert(slowest, at, row)
				slowest = slowest[:min(3, len(slowest))]
			}
		}
	}
	slices.SortStableFunc(pending, func(a, b pendingRow) int { return cmp.Compare(a.intentSeq, b.intentSeq) })
	d.renderPending(pending, f.reconciled)
	d.renderApprovals(f.approvals)
	d.renderCompactions(f.compactions, f.through)
	d.renderSlowTools(slowest, total)

	ex := exitFacts{finished: f.finished, last: &f.last}
	if isExitKind(session.Kind(f.last.kind)) {
		if f.nExit > 1 {
			ex.before = &f.exitRows[0]
		}
	} else if f.nExit > 0 {
		ex.before = &f.exitRows[1]
	}
	d.renderExit(ex)
	return d.rep, nil
}

// loopFacts gives each ask the call whose row in the tool_calls view
// says what became of it (none: "not run"): its own, found by its id. A
// call id that named several calls joins every one of them, as asksSQL
// does: one row each, by result seq.
func (f *Fold) loopFacts() loopFacts {
	st := f.st
	var into session.Call
	result := func(ref int32) (int64, bool) {
		c := st.CallAt(int(ref), &into)
		if !c.Dispatched() {
			return 0, false
		}
		return c.ResultSeq, c.Outcome() == session.ResultError
	}
	asks := f.asks
	f.asks = nil
	if len(f.reused) == 0 {
		return loopFacts{asks: asks, names: f.names, result: result}
	}
	byID := map[string][]int32{} // the dispatched calls of reused ids
	for i := range st.Calls {
		if c := st.CallAt(i, &into); f.reused[c.ID] && c.Dispatched() {
			byID[c.ID] = append(byID[c.ID], int32(i))
		}
	}
	out := make([]askRow, 0, len(asks))
	for _, a := range asks {
		c := st.CallAt(int(a.ref), &into)
		calls := byID[c.ID]
		if !f.reused[c.ID] || len(calls) == 0 {
			out = append(out, a)
			continue
		}
		if _, ok := f.names[a.key]; !ok && len(calls) > 1 {
			// Asked once, joined to several calls: named from its call
			// (the message's arguments, unless an intent replaced them).
			f.names[a.key] = [2]string{c.Tool, sqlJSON(c.Args)}
		}
		type joined struct {
			ref int32
			rs  int64
		}
		js := make([]joined, 0, len(calls))
		for _, i := range calls {
			rs, _ := result(i)
			js = append(js, joined{i, rs})
		}
		slices.SortStableFunc(js, func(a, b joined) int { return cmp.Compare(a.rs, b.rs) })
		for _, j := range js {
			row := a
			row.ref = j.ref
			out = append(out, row)
		}
	}
	return loopFacts{asks: out, names: f.names, result: result}
}

// keySet is a set of hashes by open addressing: ~12 bytes a key where a
// map spends ~35 (8 MB for the 238,095 keys of a 1M-event session).
type keySet struct {
	slots []uint64 // 0: empty
	n     int
	zero  bool // 0 itself is in the set
}

// add adds k and reports whether it was not in the set.
func (s *keySet) add(k uint64) bool {
	if k == 0 {
		added := !s.zero
		s.zero = true
		return added
	}
	if 4*(s.n+1) > 3*len(s.slots) {
		old := s.slots
		s.slots, s.n = make([]uint64, max(1024, 2*len(old))), 0
		for _, o := range old {
			if o != 0 {
				s.add(o)
			}
		}
	}
	mask := uint64(len(s.slots) - 1)
	for i := k & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case k:
			return false
		case 0:
			s.slots[i] = k
			s.n++
			return true
		}
	}
}

// Stream diagnoses session id of st from its log, read once a record at a
// time into a Fold and the anchoring check, with the session's lease
// probed for its status. A log damaged midway (recorder.ErrCorrupt) is
// diagnosed up to the damage, as the views read it, and the error is
// returned with the report; any other read error with none.
func Stream(st recorder.Store, id string) (*Report, recorder.Tail, error) {
	f := NewFold(id)
	a := replaycheck.NewAnchorer(id, nil)
	_, tail, err := st.Stream(id, func(e session.Event) {
		a.Add(e)
		f.Add(e)
	})
	if err != nil && !errors.Is(err, recorder.ErrCorrupt) {
		return nil, tail, err
	}
	rep, rerr := f.Report(recorder.Live(st.SessionDir(id)), err != nil, a.Report())
	if rerr != nil {
		return nil, tail, errors.Join(err, rerr)
	}
	return rep, tail, err
}
