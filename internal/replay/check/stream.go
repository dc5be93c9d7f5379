package check

import (
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// Verifier is Verify for a log read one event at a time (recorder.ScanFile):
// it holds the projection, one event of lookahead and the events a
// compaction call may still need, never the whole log, so verifying from
// disk needs no slice of every event (672 bytes each, full of pointers for
// the GC to scan). Feed it the events in order with Add, then call Report;
// the result is the one Verify gives for the same events.
//
// A few logs cannot be checked in one pass: seqs out of order, a
// compaction through a seq before an earlier compaction's, or a first
// compaction call with a digest after more than maxOrigBuf conversational
// events (the Verifier stops keeping them when no call has needed them).
// Report then returns ok false, and the caller verifies the log with
// Verify instead.
//
// A Verifier is not safe for concurrent use.
type Verifier struct {
	rep Report

	held     session.Event // the last event added, folded once its successor is known
	haveHeld bool
	skip     bool // the held event is a model_call already folded with its answer

	// Set from the header.
	noHeader  bool
	imported  bool
	tools     []string
	haveTools bool

	// Structure (checkStructure, one event at a time).
	index     int64
	structEnd bool // a seq gap ends the structure checks
	calls     map[string]bool
	problems  []Problem

	// The fold.
	stopped bool // diverged: no more digests
	p       *session.Projector
	d       *session.Digester
	prev    []session.Message
	spare   []session.Message // prev's twin, reused for the next payload
	agreed  int64

	// Compaction calls: the originals up to a compaction's through,
	// projected without compactions (session.CompactionMessages), fed
	// lazily from buf since through lies behind the newest event.
	orig     *session.Projector
	od       *session.Digester
	buf      []origEvent
	wantOrig bool // a compaction call has been checked: keep orig current
	origGap  bool // originals were dropped for a chunked part, not fed to orig
	lostOrig bool // buf outgrew maxOrigBuf before any was: Report asks for Verify if one comes
	fedMax   int64
	lastSeq  int64
	unsorted bool
	redo     bool // cannot verify in one pass; see Report
}

// tailReserve is the room a Verifier makes for a projection's messages.
const tailReserve = 64

// maxOrigBuf is how many originals a Verifier keeps for a compaction call
// before it has seen one whose digest it must check (a variable for tests).
var maxOrigBuf = 16384

// origEvent keeps the fields Projector.Add reads from the conversational
// events session.CompactionMessages collects.
type origEvent struct {
	kind                                                   session.Kind
	seq                                                    int64
	text, callID, tool, output, errText, status, out, reas string
	calls                                                  []session.ToolCall
}

func (o origEvent) event() session.Event {
	return session.Event{Kind: o.kind, Seq: o.seq, Text: o.text, CallID: o.callID, Tool: o.tool, Output: o.output,
		Error: o.errText, Status: o.status, Outcome: o.out, Reason: o.reas, ToolCalls: o.calls}
}

// NewVerifier starts verifying session id.
func NewVerifier(id string) *Verifier {
	return &Verifier{rep: Report{SessionID: id, Status: StatusOK}, calls: map[string]bool{}}
}

// Add folds the next event of the log.
func (v *Verifier) Add(e session.Event) {
	if v.haveHeld {
		v.step(&v.held, &e)
	}
	v.held, v.haveHeld = e, true
}

// addAll is Add of each event of evs in turn, without copying them (an
// Event is 672 bytes): only the last is kept, as the lookahead.
func (v *Verifier) addAll(evs []session.Event) {
	if len(evs) == 0 {
		return
	}
	if v.haveHeld {
		v.step(&v.held, &evs[0])
	}
	for i := range len(evs) - 1 {
		v.step(&evs[i], &evs[i+1])
	}
	v.held, v.haveHeld = evs[len(evs)-1], true
}

// Report finishes the fold and returns Verify's report, or ok false when
// the log must be verified with Verify (see Verifier).
func (v *Verifier) Report() (rep Report, ok bool) {
	if v.haveHeld {
		v.step(&v.held, nil)
		v.haveHeld = false
	}
	if v.redo {
		return Report{}, false
	}
	rep = v.rep
	if v.noHeader || v.index == 0 {
		rep.Status = StatusBroken
		rep.Problems = []Problem{{Code: CodeNoHeader, Seq: 1, Detail: "the log does not start with session_started"}}
		return rep, true
	}
	rep.Problems = v.problems
	return finish(rep), true
}

// step handles event e of the log, whose successor is next (nil at the
// end), as Verify's loop and checkStructure do at that index.
func (v *Verifier) step(e, next *session.Event) {
	i := v.index
	v.index++
	v.rep.Events++
	if i == 0 {
		if e.Kind != session.KindSessionStarted {
			v.noHeader = true
		} else {
			v.rep.ImportedFrom = ImportedFrom(*e)
			v.imported = v.rep.ImportedFrom != ""
			v.tools, v.haveTools = HeaderTools(*e)
			v.p = session.NewProjector(e.System)
			// Room for a typical context between compactions, so that a
			// thousand short logs do not each grow it from empty.
			v.p.Reserve(tailReserve)
			v.spare = make([]session.Message, 0, tailReserve+4)
			v.d = session.NewDigester()
		}
	}
	if v.noHeader {
		return
	}
	v.structure(i, e, next)
	if e.Seq <= v.lastSeq && i > 0 {
		v.unsorted = true
	}
	v.lastSeq = e.Seq
	if !v.stopped {
		v.fold(e, next)
	}
	switch e.Kind {
	case session.KindUserMessage, session.KindAssistantMessage, session.KindToolResult,
		session.KindReconciled, session.KindApprovalDenied, session.KindInterrupted:
		if v.lostOrig {
			break
		}
		if !v.wantOrig && len(v.buf) >= maxOrigBuf {
			// No compaction call with a digest so far (an older log, or
			// none compacts): stop keeping originals for one.
			v.buf, v.lostOrig = nil, true
			break
		}
		v.buf = append(v.buf, origEvent{kind: e.Kind, seq: e.Seq, text: e.Text, callID: e.CallID, tool: e.Tool,
			output: e.Output, errText: e.Error, status: e.Status, out: e.Outcome, reas: e.Reason, calls: e.ToolCalls})
	case session.KindCompaction:
		// Later compactions reach at least this far (else Report asks for
		// Verify): fold the originals up to here so buf stays short. A
		// chunked part's originals are read by no later request (those
		// start after it), so they are dropped rather than folded.
		if v.wantOrig && !v.unsorted && e.Through >= v.fedMax {
			if session.SummaryFrom(*e) > 0 {
				v.drop(e.Through)
			} else {
				v.feed(e.Through)
			}
		}
	}
}

// feed folds the buffered originals up to seq through into orig.
func (v *Verifier) feed(through int64) {
	if v.orig == nil {
		v.orig = session.NewProjector("")
		v.od = session.NewDigester()
	}
	n := 0
	for n < len(v.buf) && v.buf[n].seq <= through {
		v.orig.Add(v.buf[n].event())
		v.fedMax = v.buf[n].seq
		n++
	}
	v.buf = append(v.buf[:0], v.buf[n:]...)
}

// structure is checkStructure's loop body.
func (v *Verifier) structure(i int64, e, next *session.Event) {
	if v.structEnd {
		return
	}
	if want := i + 1; e.Seq != want {
		v.problems = append(v.problems, Problem{Code: CodeSeqGap, Seq: e.Seq, Detail: fmt.Sprintf("event %d has seq %d", want, e.Seq)})
		v.structEnd = true
		return
	}
	switch e.Kind {
	case session.KindAssistantMessage:
		for _, c := range e.ToolCalls {
			v.calls[c.ID] = false
		}
		if unpairedAssistant(*e, next, v.imported) {
			v.problems = append(v.problems, Problem{Code: CodeUnpairedAssistant, Seq: e.Seq, Detail: "no model_call follows the assistant message"})
		}
	case session.KindToolResult:
		answered, ok := v.calls[e.CallID]
		switch {
		case !ok:
			v.problems = append(v.problems, Problem{Code: CodeOrphanResult, Seq: e.Seq, Detail: fmt.Sprintf("call %s (%s) was never made", e.CallID, e.Tool)})
		case answered:
			v.problems = append(v.problems, Problem{Code: CodeDuplicateResult, Seq: e.Seq, Detail: fmt.Sprintf("call %s (%s) already has a result", e.CallID, e.Tool)})
		default:
			v.calls[e.CallID] = true
		}
	}
}

// fold is one turn of Verify's loop.
func (v *Verifier) fold(e, next *session.Event) {
	if v.skip {
		v.skip = false
		return
	}
	switch {
	case e.Kind == session.KindAssistantMessage && next != nil &&
		next.Kind == session.KindModelCall && next.Seq == e.Seq+1:
		if !v.check(next, next) {
			return
		}
		v.p.Add(*e)
		v.p.Add(*next)
		v.skip = true
		return
	case e.Kind == session.KindModelCall:
		if !v.check(e, next) {
			return
		}
	}
	v.p.Add(*e)
}

// check is Verify's check of one model call; after is the event that
// follows index i in Verify (the call itself when it answers an assistant
// message).
func (v *Verifier) check(call, after *session.Event) bool {
	rep := &v.rep
	rep.ModelCalls++
	if isCompactionCall(*call) {
		if call.RequestDigest == "" || after == nil || after.Kind != session.KindCompaction {
			rep.Skipped++
			return true
		}
		rep.Checked++
		msgs, ok := v.compactionMessages(after)
		if !ok {
			v.redo, v.stopped = true, true
			return false
		}
		got := v.od.Digest(msgs, []string{})
		if got != call.RequestDigest {
			rep.Status = StatusDiverged
			rep.Divergence = explain(*call, rep.Checked, got, msgs, nil, nil, 0)
			v.stopped = true
			return false
		}
		return true
	}
	if call.RequestDigest == "" || !v.haveTools {
		rep.Skipped++
		return true
	}
	rep.Checked++
	// Two slices take turns: msgs is built in the one prev does not hold.
	msgs := v.p.AppendMessages(v.spare[:0])
	got := v.d.Digest(msgs, v.tools)
	if got == call.RequestDigest {
		if v.prev == nil {
			v.prev = make([]session.Message, 0, cap(msgs))
		}
		v.spare, v.prev, v.agreed = v.prev, msgs, call.Seq
		return true
	}
	rep.Status = StatusDiverged
	rep.Divergence = explain(*call, rep.Checked, got, msgs, v.tools, v.prev, v.agreed)
	v.stopped = true
	return false
}

// compactionMessages is session.CompactionMessages over the events added so
// far, for the compaction c recorded after the call. A summary of
// everything up to its through reads orig, the originals' projection,
// which only grows between compactions, so it is fed from where the last
// one stopped; a chunked part (summary_from) reads the buffered originals
// from its summary_from on, which no earlier part covered.
func (v *Verifier) compactionMessages(c *session.Event) ([]session.Message, bool) {
	through := c.Through
	if v.unsorted || v.lostOrig || through < v.fedMax {
		return nil, false
	}
	v.wantOrig = true
	if v.od == nil {
		v.od = session.NewDigester()
	}
	if from, fit := session.CompactionInput(*c); from > 0 {
		if from <= v.fedMax {
			return nil, false // it re-reads originals already folded away: Verify does it
		}
		var src []session.Event
		for _, o := range v.buf {
			if o.seq >= from && o.seq <= through {
				src = append(src, o.event())
			}
		}
		msgs, _ := session.CompactionMessages(src, from, through, fit)
		return msgs, true
	}
	if v.origGap {
		return nil, false // orig misses the originals of chunked parts: Verify does it
	}
	v.feed(through)
	prompt, _ := session.CompactionMessages(nil, 0, 0, 0)
	return append(prompt, v.orig.Messages()...), true
}

// drop forgets the buffered originals up to seq through (a chunked part
// read them), leaving orig without them.
func (v *Verifier) drop(through int64) {
	n := 0
	for n < len(v.buf) && v.buf[n].seq <= through {
		v.fedMax = v.buf[n].seq
		n++
	}
	if n > 0 {
		v.origGap = true
	}
	v.buf = append(v.buf[:0], v.buf[n:]...)
}

// VerifyLog verifies the log at path as it is read: recorder.ScanFile
// decodes it and a Verifier folds each event, so no more than the file's
// bytes and the projection are held. With pipeline set, decoding and
// verifying run on two goroutines (for one long log on a machine with a
// core to spare; for many logs, verify several at once instead). A log the
// Verifier hands back is read again whole for Verify. A log that cannot be
// read gives a report with StatusError, whose Events counts the good
// events before the damage.
func VerifyLog(id, path string, pipeline bool) Report {
	return verifyLog(id, path, pipeline, &scratch{}, nil)
}

// endCheck judges a log that read cleanly by its last event and its tail
// (recorder.Store.CheckEnd); nil believes the log alone.
type endCheck func(id string, last session.Event, tail recorder.Tail) error

// scratch is what verifying one log after another can reuse: the file
// buffer (the events' strings alias it, so it is reused only once the
// report is detached from it) and the batch of events.
type scratch struct {
	data  []byte
	batch []session.Event
}

func verifyLog(id, path string, pipeline bool, sc *scratch, check endCheck) Report {
	v := NewVerifier(id)
	n, tail, err := scan(path, v, pipeline, sc)
	if err == nil && check != nil {
		err = check(id, v.held, tail)
	}
	if err != nil {
		return Report{SessionID: id, Status: StatusError, Events: int64(n), Error: err.Error(), Err: err}
	}
	if rep, ok := v.Report(); ok {
		return detach(rep)
	}
	evs, _, err := recorder.ReadFile(path)
	if err != nil {
		return Report{SessionID: id, Status: StatusError, Events: int64(len(evs)), Error: err.Error(), Err: err}
	}
	return verifyBatch(id, evs, VerifyOptions{})
}

// detach copies the strings of rep's divergence, which may share the
// buffer recorder.ScanFile read the log into, so that a report kept (the
// CLI keeps one per session) does not keep its whole log.
func detach(rep Report) Report {
	rep.ImportedFrom = strings.Clone(rep.ImportedFrom)
	d := rep.Divergence
	if d == nil {
		return rep
	}
	c := *d
	c.LogDigest, c.ReplayDigest = strings.Clone(d.LogDigest), strings.Clone(d.ReplayDigest)
	c.Diffs = make([]FieldDiff, len(d.Diffs))
	for i, f := range d.Diffs {
		f.Role, f.Field, f.Log, f.Replay = strings.Clone(f.Role), strings.Clone(f.Field), strings.Clone(f.Log), strings.Clone(f.Replay)
		c.Diffs[i] = f
	}
	c.Suspects = make([]MessageRef, len(d.Suspects))
	for i, m := range d.Suspects {
		m.Role, m.Preview = strings.Clone(m.Role), strings.Clone(m.Preview)
		c.Suspects[i] = m
	}
	if d.Diffs == nil {
		c.Diffs = nil
	}
	if d.Suspects == nil {
		c.Suspects = nil
	}
	rep.Divergence = &c
	return rep
}

// batchSize is how many events travel together from the decoding
// goroutine to the verifying one: enough to make the hand-off rare, few
// enough to stay in cache.
const batchSize = 128

// scan is recorder.ScanFile(path, v.Add), handing events over in batches;
// with pipeline set, the fold runs on a second goroutine.
func scan(path string, v *Verifier, pipeline bool, sc *scratch) (int, recorder.Tail, error) {
	if !pipeline {
		if sc.batch == nil {
			sc.batch = make([]session.Event, 0, batchSize)
		}
		b := sc.batch[:0]
		n, tail, data, err := recorder.ScanFileInto(path, sc.data, func(e session.Event) {
			b = append(b, e)
			if len(b) == batchSize {
				v.addAll(b)
				b = b[:0]
			}
		})
		v.addAll(b)
		clear(b) // the events' strings alias data, which is reused
		sc.data = data
		return n, tail, err
	}
	full := make(chan []session.Event, 4)
	free := make(chan []session.Event, 4)
	for range cap(free) {
		free <- make([]session.Event, 0, batchSize)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for b := range full {
			v.addAll(b)
			free <- b[:0]
		}
	}()
	b := <-free
	n, tail, err := recorder.ScanFile(path, func(e session.Event) {
		b = append(b, e)
		if len(b) == batchSize {
			full <- b
			b = <-free
		}
	})
	if len(b) > 0 {
		full <- b
	}
	close(full)
	<-done
	return n, tail, err
}

// VerifyLogs verifies many logs (path gives the log of each id) with
// VerifyLog, as many at once as there are CPUs, and returns the reports in
// the order of ids. A single log gets the CPUs to itself: its decode and
// its verify run on two goroutines.
func VerifyLogs(ids []string, path func(id string) string) []Report {
	return verifyLogs(ids, path, nil)
}

// VerifyStore is VerifyLogs of sessions of st, which also judges each log
// by st's witnesses as every reader of the store does: one that lost
// durable records gives StatusError with a *recorder.ShortLogError, not a
// report of the shorter log.
func VerifyStore(ids []string, st recorder.Store) []Report {
	return verifyLogs(ids, st.LogPath, st.CheckEnd)
}

func verifyLogs(ids []string, path func(id string) string, check endCheck) []Report {
	reps := make([]Report, len(ids))
	workers := min(runtime.GOMAXPROCS(0), max(len(ids), 1))
	pipeline := workers == 1 && runtime.GOMAXPROCS(0) > 1
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			sc := &scratch{}
			for i := range next {
				reps[i] = verifyLog(ids[i], path(ids[i]), pipeline, sc, check)
			}
		})
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()
	return reps
}
