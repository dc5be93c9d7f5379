package view

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/termsafe"
)

// DefaultMaxText is how many bytes of one recorded string (a tool output,
// an assistant text, a summary) the page embeds. Tool outputs are kept up
// to 256 KiB in the log; embedding them whole would make a long session's
// page tens of megabytes, so the rest is left out with a note saying how
// much and where the whole text is.
const DefaultMaxText = 8 << 10

// DefaultMaxTotal bounds the recorded text a page embeds in all. When the
// strings of a session, each cut to MaxText, would pass it, they are cut
// shorter, all to the same length (the longest that fits), so a long
// session of long outputs still makes a page of a few megabytes.
const DefaultMaxTotal = 6 << 20

// DefaultMaxEvents bounds the events a page shows: a longer session's
// page has its first and its last DefaultMaxEvents/2, and a note of those
// left out (Header.Omitted). Every figure still folds the whole log. A
// session of a million events once made a page of 225 MB that took 5 GB
// and four minutes to write; this keeps any page to about twice the
// 10,000-event one.
const DefaultMaxEvents = 20_000

// minText is the shortest cut MaxTotal makes.
const minText = 256

// Input is one session as the view reads it: its events and what the log
// cannot say about itself.
type Input struct {
	ID string
	// Events are the session's events; or Stream reads them, handing each
	// to fn in order, and returns what reading the log found (its Tail and
	// ReadErr, which then override the fields below). Build reads Stream
	// once and holds the events it shows, not the session: a page of a
	// session of a million events costs its 20,000 shown events and the
	// fold. CompareSessions takes Events.
	Events []session.Event
	Stream func(fn func(session.Event)) (recorder.Tail, error)
	// Live, Tail and ReadErr are what reading the log found (a process
	// holds its lease; its tail was torn; reading stopped at damage), the
	// inputs of recorder.SummaryOf, so the header says what `agentctl
	// sessions` says.
	Live    bool
	Tail    recorder.Tail
	ReadErr error
	// Findings are the session's diagnose findings, shown on top.
	Findings []Finding
	// Forks are the sessions forked from this one.
	Forks []Fork
	// Artifact returns the link to an artifact the log names (its path
	// relative to the session folder, as tool_result records it), or
	// false when the artifact is not at hand. Nil links none.
	Artifact func(rel string) (href string, ok bool)
	// SessionHref returns the link to another session's view (a child, a
	// fork, the parent). Nil links none.
	SessionHref func(id string) string
	// Origin says where the events were read from: "home DIR" or
	// "bundle FILE".
	Origin string
	// ArtifactNote tells a reader where the linked artifacts are (for a
	// bundle: unpack it beside the page).
	ArtifactNote string
	// MaxText, MaxTotal and MaxEvents override DefaultMaxText,
	// DefaultMaxTotal and DefaultMaxEvents.
	MaxText   int
	MaxTotal  int
	MaxEvents int
}

// Finding is one diagnose finding: its kind, its text and the seqs it
// cites (package diagnose's Finding).
type Finding struct {
	Kind string  `json:"kind"`
	Text string  `json:"text"`
	Seqs []int64 `json:"seqs"`
}

// Fork is a session forked from the viewed one at a seq.
type Fork struct {
	ID   string `json:"id"`
	At   int64  `json:"at"`
	Href string `json:"href,omitempty"`
}

// Link is a link to another session's view.
type Link struct {
	ID   string `json:"id"`
	Href string `json:"href,omitempty"`
}

// Session is the data of one session's page. Its JSON form is what the
// page embeds (see the package doc); the page's script is its only reader.
type Session struct {
	// Summary is the session's line of `agentctl sessions --json`, from
	// the same fold and the same inputs.
	Summary recorder.Summary `json:"summary"`
	Header  Header           `json:"header"`
	// Findings are diagnose's, in report order.
	Findings []Finding `json:"findings"`
	Events   []Event   `json:"events"`
	Calls    []Call    `json:"calls"`
	Marks    []Mark    `json:"marks"`
}

// Header is what the page's header shows besides Summary.
type Header struct {
	PinnedProvider string `json:"pinned_provider,omitempty"`
	PinnedModel    string `json:"pinned_model,omitempty"`
	// DurationMS runs from the header to the end, or to the last event of
	// a log with no end.
	DurationMS int64 `json:"duration_ms"`
	Turns      int   `json:"turns"`
	// Exit is the exit path in words: the final status and its reason, or
	// where the log stops.
	Exit   string `json:"exit"`
	Source string `json:"source"`
	// NoUsage and NoTimes: the import's source records no tokens (so no
	// cost) or no times, and the page says so instead of showing zeros
	// as if they were measured (session.State.Records).
	NoUsage     bool     `json:"no_usage,omitempty"`
	NoTimes     bool     `json:"no_times,omitempty"`
	Goal        string   `json:"goal,omitempty"` // the first user message, pinned verbatim
	System      string   `json:"system,omitempty"`
	SpecPath    string   `json:"spec_path,omitempty"`
	SpecHash    string   `json:"spec_hash,omitempty"`
	Version     string   `json:"agentctl_version,omitempty"`
	Workspace   string   `json:"workspace,omitempty"`
	Compactions int      `json:"compactions"`
	Grants      []string `json:"grants,omitempty"`
	Parent      *Link    `json:"parent,omitempty"`
	ForkedFrom  int64    `json:"forked_from,omitempty"`
	Children    []Link   `json:"children,omitempty"`
	Forks       []Fork   `json:"forks,omitempty"`
	Origin      string   `json:"origin,omitempty"`
	// ArtifactNote says where linked artifacts are.
	ArtifactNote string `json:"artifact_note,omitempty"`
	// Clipped counts the strings cut, to MaxText bytes (smaller than
	// Input.MaxText when the page's total would pass Input.MaxTotal).
	Clipped int `json:"clipped,omitempty"`
	MaxText int `json:"max_text"`
	// Omitted says which events the page leaves out (see
	// DefaultMaxEvents); nil when it shows them all.
	Omitted *Omitted `json:"omitted,omitempty"`
}

// Omitted is the run of events a long session's page leaves out, between
// the first Head events and the last Tail.
type Omitted struct {
	Count   int   `json:"count"`
	FromSeq int64 `json:"from_seq"`
	ToSeq   int64 `json:"to_seq"`
	Head    int   `json:"head"`
	Tail    int   `json:"tail"`
}

// Event is one event as the page shows it: the recorded fields it
// displays, each string made safe for display (termsafe: control and
// bidirectional characters become visible escapes) and cut to MaxText.
type Event struct {
	Seq  int64  `json:"seq"`
	MS   int64  `json:"ms"` // since the header's timestamp
	Kind string `json:"kind"`
	// Lvl highlights the event: "error" (an error, a failed call or
	// check, a budget stop), "warn" (a refusal, a cut answer, an
	// interruption, a denial, a needs_human reconciliation, a change of
	// model or spec) or "".
	Lvl string `json:"lvl,omitempty"`
	// Call is the 1-based index in Session.Calls of the call the event
	// belongs to (a tool event); 0 for none.
	Call  int   `json:"call,omitempty"`
	Calls []int `json:"calls,omitempty"` // of an assistant message, per tool call
	Turn  int   `json:"turn,omitempty"`  // of an assistant message

	Text         string `json:"text,omitempty"`
	Refusal      string `json:"refusal,omitempty"`
	FinishReason string `json:"finish_reason,omitempty"`
	Provider     string `json:"provider,omitempty"`
	Model        string `json:"model,omitempty"`
	In           int64  `json:"in,omitempty"`
	Out          int64  `json:"out,omitempty"`
	CacheRead    int64  `json:"cache_read,omitempty"`
	CacheWrite   int64  `json:"cache_write,omitempty"`
	// Cost is cost_usd.
	Cost         float64 `json:"cost,omitempty"`
	LatencyMS    int64   `json:"latency_ms,omitempty"`
	ErrorType    string  `json:"error_type,omitempty"`
	Attempt      int64   `json:"attempt,omitempty"`
	Purpose      string  `json:"purpose,omitempty"` // a model_call's attrs.purpose
	CallID       string  `json:"call_id,omitempty"`
	Tool         string  `json:"tool,omitempty"`
	Args         string  `json:"args,omitempty"`
	Output       string  `json:"output,omitempty"`
	Artifact     string  `json:"artifact,omitempty"`
	ArtifactHref string  `json:"artifact_href,omitempty"`
	Scope        string  `json:"scope,omitempty"`
	Through      int64   `json:"through,omitempty"`
	Summary      string  `json:"summary,omitempty"`
	Sources      int     `json:"sources,omitempty"` // len(source_seqs)
	Status       string  `json:"status,omitempty"`
	Outcome      string  `json:"outcome,omitempty"`
	Reason       string  `json:"reason,omitempty"`
	Evidence     string  `json:"evidence,omitempty"`
	Error        string  `json:"error,omitempty"`
	Child        *Link   `json:"child,omitempty"`
	SpecPath     string  `json:"spec_path,omitempty"`
	Name         string  `json:"name,omitempty"`
	ParentID     string  `json:"parent_id,omitempty"`
	ForkedFrom   int64   `json:"forked_from,omitempty"`
	// Raw is the record of a kind this version does not know.
	Raw string `json:"raw,omitempty"`
}

// Call is one tool call as session.State folds it; seqs are 0 for what
// did not happen.
type Call struct {
	ID         string `json:"id"`
	Tool       string `json:"tool"`
	Args       string `json:"args,omitempty"`
	Turn       int    `json:"turn,omitempty"`
	Request    int64  `json:"request,omitempty"`
	Intent     int64  `json:"intent,omitempty"`
	Result     int64  `json:"result,omitempty"`
	Approval   int64  `json:"approval,omitempty"`
	Decision   int64  `json:"decision,omitempty"`
	Reconciled int64  `json:"reconciled,omitempty"`
	// Outcome is Call.Outcome of package session, except that a call
	// nothing ended is "denied" or "awaiting_approval" when it is.
	Outcome    string `json:"outcome"`
	Granted    string `json:"granted,omitempty"`
	Denied     bool   `json:"denied,omitempty"`
	NeedsHuman bool   `json:"needs_human,omitempty"`
	Key        string `json:"idempotency_key,omitempty"`
	LatencyMS  int64  `json:"latency_ms,omitempty"`
}

// Mark is a point of the session the chart and the timeline mark.
type Mark struct {
	Seq int64 `json:"seq"`
	// Kind is "compaction", "error", "interrupted", "crash" (the log of an
	// invocation stops here with no end), "resume" (an invocation starts
	// here after a stop or a crash), or "fork" (a fork's own events start).
	Kind  string `json:"kind"`
	Label string `json:"label"`
}

// Build makes the page data of one session from its events, folding them
// with session.State (the one fold every reader uses) as it goes, so each
// tool event is attributed to the call the fold attributes it to. It
// reads the events once, keeping the first and the last MaxEvents/2 of
// them (the ones the page shows) as they come.
func Build(in Input) (*Session, error) {
	each := in.Stream
	if each == nil {
		each = func(fn func(session.Event)) (recorder.Tail, error) {
			for _, e := range in.Events {
				fn(e)
			}
			return in.Tail, in.ReadErr
		}
	}
	limit := maxEvents(in)
	head := limit / 2
	tailN := max(1, limit-head)
	// The lean fold packs each settled call into a few dozen bytes (nil
	// in st.Calls): calls are numbered by their place in st.Calls, from 1,
	// and only those of the events shown are unpacked at the end, so a
	// session of 238,095 calls costs ~30 MB here, not ~90 and a map.
	st := session.NewLeanState()
	index := func(id string) int {
		i, ok := st.CallIndex(id)
		if !ok {
			return 0
		}
		return i + 1
	}
	var (
		first, ring []kept // the first head events; the last tailN, a ring from ringAt
		ringAt      int
		omitted     *Omitted
		hdr         session.Event
		goal        *string
		n           int
		mk          marker
	)
	tail, readErr := each(func(e session.Event) {
		if n == 0 {
			hdr = e
			mk.start(e)
		}
		n++
		st.Add(e)
		mk.add(e)
		if goal == nil && e.Kind == session.KindUserMessage {
			g := e.Text
			goal = &g
		}
		k := keep(e)
		switch e.Kind {
		case session.KindAssistantMessage:
			k.turn = st.Turns
			for _, i := range st.Latest {
				k.calls = append(k.calls, i+1)
			}
		case session.KindToolIntent, session.KindToolResult, session.KindReconciled,
			session.KindApprovalRequest, session.KindApprovalGranted, session.KindApprovalDenied:
			k.call = index(e.CallID)
		}
		switch {
		case len(first) < head:
			first = append(first, k)
		case len(ring) < tailN:
			ring = append(ring, k)
		default:
			// The oldest of the last events leaves the page.
			old := ring[ringAt].seq
			if omitted == nil {
				omitted = &Omitted{FromSeq: old, Head: head, Tail: tailN}
			}
			omitted.Count++
			omitted.ToSeq = old
			ring[ringAt] = k
			ringAt = (ringAt + 1) % tailN
		}
	})
	if in.Stream != nil {
		in.Tail, in.ReadErr = tail, readErr
	}
	if n == 0 {
		if in.ReadErr != nil {
			return nil, fmt.Errorf("view %s: no event could be read: %w", in.ID, in.ReadErr)
		}
		return nil, fmt.Errorf("view %s: the log has no events", in.ID)
	}
	shown := append(first, ring[ringAt:]...)
	shown = append(shown, ring[:ringAt]...)
	c := &cleaner{max: textCap(in, func(yield func(session.Event)) {
		for i := range shown {
			yield(shown[i].event())
		}
	})}
	first, ring = nil, nil // shown holds them
	out := &Session{Findings: []Finding{}, Events: make([]Event, 0, len(shown)), Calls: []Call{}, Marks: []Mark{}}
	// What needs the fold comes first, so that the fold (most of what a
	// long session's view holds) is let go before the events are made.
	st.Live = in.Live
	out.Summary = recorder.SummaryOf(in.ID, st, in.Tail, in.ReadErr)
	// The calls of the events shown, renumbered in their order.
	used := make([]int, len(st.Calls)+1) // old index -> new, 0 for left out
	if omitted == nil {
		for i := range used {
			used[i] = i
		}
	} else {
		for _, k := range shown {
			used[k.call] = 1
			for _, i := range k.calls {
				used[i] = 1
			}
		}
		used[0] = 0 // no call
		n := 0
		for i := 1; i < len(used); i++ {
			if used[i] != 0 {
				n++
				used[i] = n
			}
		}
	}
	for i := range st.Calls {
		if used[i+1] == 0 {
			continue
		}
		sc := st.CallAt(i, nil)
		// A call nothing ended is "pending" in the tool_calls view; the
		// page says why when the log does.
		outcome := sc.Outcome()
		switch {
		case outcome == "pending" && sc.Denied:
			outcome = session.ResultDenied
		case outcome == "pending" && sc.AwaitingApproval():
			outcome = "awaiting_approval"
		}
		out.Calls = append(out.Calls, Call{
			ID: c.str(sc.ID), Tool: c.str(sc.Tool), Args: c.str(string(sc.Args)), Turn: sc.Turn,
			Request: sc.RequestSeq, Intent: sc.IntentSeq, Result: sc.ResultSeq, Approval: sc.ApprovalSeq,
			Decision: sc.DecisionSeq, Reconciled: sc.ReconciledSeq, Outcome: c.str(outcome),
			Granted: c.str(sc.Granted), Denied: sc.Denied, NeedsHuman: sc.NeedsHuman,
			Key: c.str(sc.IdempotencyKey), LatencyMS: sc.LatencyMS,
		})
	}
	for _, f := range in.Findings {
		seqs := f.Seqs
		if seqs == nil {
			seqs = []int64{}
		}
		out.Findings = append(out.Findings, Finding{Kind: c.str(f.Kind), Text: c.str(f.Text), Seqs: seqs})
	}
	out.Marks = mk.finish(out.Summary.Status, st.LastSeq)
	if omitted != nil {
		// Marks are drawn at their events: keep those of the events shown.
		ms := out.Marks[:0]
		for _, m := range out.Marks {
			if m.Seq < omitted.FromSeq || m.Seq > omitted.ToSeq {
				ms = append(ms, m)
			}
		}
		out.Marks = ms
	}
	out.Header = header(in, st, out.Summary, c, hdr, goal)
	out.Header.Omitted = omitted
	st = nil
	t0 := hdr.TS
	for i, k := range shown {
		e := k.event()
		ev := c.event(e, t0)
		ev.Turn, ev.Calls, ev.Call = k.turn, k.calls, used[k.call]
		for j := range ev.Calls {
			ev.Calls[j] = used[ev.Calls[j]]
		}
		if e.Artifact != "" && in.Artifact != nil && safeArtifact(e.Artifact) {
			if href, ok := in.Artifact(e.Artifact); ok {
				ev.ArtifactHref = href
			}
		}
		if e.ChildSessionID != "" {
			ev.Child = link(in, e.ChildSessionID)
		}
		out.Events = append(out.Events, ev)
		shown[i] = kept{} // the event is in the page's form now
	}
	out.Header.Clipped = c.clipped // the events' strings too
	return out, nil
}

// kept is an event the page shows, with what the fold said of it when it
// was read: its call, the calls of an assistant message, its turn. The
// event is held in its log form (session.Encode), a few hundred bytes,
// not as a session.Event of ~700 bytes of fields before its strings: the
// 20,000 a long session's page shows cost ~5 MB, not ~18.
type kept struct {
	seq   int64
	b     []byte         // the event, encoded
	e     *session.Event // the event, if it could not be encoded
	call  int
	calls []int
	turn  int
}

func keep(e session.Event) kept {
	if b, err := session.Encode(e); err == nil {
		return kept{seq: e.Seq, b: b}
	}
	return kept{seq: e.Seq, e: &e}
}

// event is the kept event, decoded: the log's own form reads back as the
// event it was read as.
func (k kept) event() session.Event {
	if k.e != nil {
		return *k.e
	}
	e, err := session.Decode(k.b)
	if err != nil {
		// Only keep encoded these bytes: a failure is a bug here.
		panic("view: decode a kept event: " + err.Error())
	}
	return e
}

func maxEvents(in Input) int {
	if in.MaxEvents > 0 {
		return in.MaxEvents
	}
	return DefaultMaxEvents
}

func link(in Input, id string) *Link {
	l := &Link{ID: termsafe.String(id)}
	if in.SessionHref != nil {
		l.Href = in.SessionHref(id)
	}
	return l
}

// safeArtifact reports whether rel is a path inside the session folder's
// artifacts (what the runner records); anything else a log names is not
// linked.
func safeArtifact(rel string) bool {
	return strings.HasPrefix(rel, "artifacts/") && path.Clean(rel) == rel && !strings.Contains(rel, "\\")
}

func header(in Input, st *session.State, sum recorder.Summary, c *cleaner, hdr session.Event, goal *string) Header {
	h := Header{
		PinnedProvider: c.str(st.PinnedProvider), PinnedModel: c.str(st.PinnedModel),
		Turns: st.Turns, Compactions: st.Compactions, System: c.str(st.System),
		Origin: c.str(in.Origin), ArtifactNote: in.ArtifactNote, ForkedFrom: st.ForkedFrom,
		NoUsage: !st.Records(session.NotRecordedUsage), NoTimes: !st.Records(session.NotRecordedTimes),
	}
	h.SpecPath, h.SpecHash, h.Version, h.Workspace = c.str(hdr.SpecPath), c.str(hdr.SpecHash), c.str(hdr.AgentctlVersion), c.str(hdr.Workspace)
	for _, g := range st.GrantList() {
		h.Grants = append(h.Grants, c.str(g))
	}
	end := sum.Ended
	if end.IsZero() {
		end = st.LastTS
	}
	h.DurationMS = max(0, end.Sub(st.Started).Milliseconds())
	if goal != nil {
		h.Goal = c.str(*goal)
	}
	if h.Goal == "" && hdr.Text != "" {
		h.Goal = c.str(hdr.Text)
	}
	of, n := session.SideThreadOf(hdr)
	switch {
	case of != "":
		// Before an import: a collected session's side thread is both.
		h.Source = fmt.Sprintf("side thread %d of %s (a call of its client sharing nothing with its conversation)", n, c.str(of))
	case st.ImportedFrom != "":
		h.Source = "import from " + c.str(st.ImportedFrom)
	case st.ParentSessionID != "":
		h.Source = fmt.Sprintf("fork of %s at seq %d", c.str(st.ParentSessionID), st.ForkedFrom)
	case attr(hdr.Attrs, "source") != "":
		h.Source = c.str(attr(hdr.Attrs, "source"))
	default:
		h.Source = "run"
	}
	if st.ParentSessionID != "" {
		h.Parent = link(in, st.ParentSessionID)
	}
	for _, id := range st.Children {
		h.Children = append(h.Children, *link(in, id))
	}
	for _, f := range in.Forks {
		l := link(in, f.ID)
		h.Forks = append(h.Forks, Fork{ID: l.ID, At: f.At, Href: l.Href})
	}
	h.Exit = exitPath(st, sum, in.ReadErr)
	h.Clipped, h.MaxText = c.clipped, c.max
	return h
}

// exitPath says how the session ended, in words.
func exitPath(st *session.State, sum recorder.Summary, readErr error) string {
	switch sum.Status {
	case session.StatusCorrupt:
		msg := "the log is corrupt after seq " + fmt.Sprint(st.LastSeq)
		if readErr != nil {
			msg += ": " + termsafe.String(readErr.Error())
		}
		return msg
	case session.StatusRunning:
		return fmt.Sprintf("still running (a process holds the lease); last event seq %d %s", st.LastSeq, st.LastKind)
	case session.StatusCrashed:
		return fmt.Sprintf("crashed: the log stops at seq %d (%s) with no end; 'agentctl resume %s' continues it", st.LastSeq, st.LastKind, termsafe.String(st.ID))
	case session.StatusImported:
		return "imported: the source records no end"
	}
	s := string(sum.Status)
	if r := st.Reason(); r != "" {
		s += ": " + r
	}
	return termsafe.String(s)
}

// marker finds the points the chart and the timeline mark, an event at a
// time (add), then the end (finish). Resumes and crashes are read from the
// log's shape, since no event says "resumed":
//
//   - after a session_finished, what a human records between invocations
//     (approve, deny, resolve: approval_granted, approval_denied,
//     reconciled, tool_result) is not a resume; the next event of any
//     other kind starts one;
//   - with no session_finished before it, what only a resume writes after
//     a crash (a reconciliation, a torn tail recovered, an earlier
//     attempt killed) starts one, and the crashed invocation's log
//     stopped at the event before.
//
// A crash between calls with nothing to settle leaves no trace to find.
type marker struct {
	out                          []Mark
	n                            int
	prevSeq                      int64
	afterFinish, prevResumeWrite bool
}

// start notes the header: a fork's own events start after its copy.
func (m *marker) start(hdr session.Event) {
	m.out = []Mark{}
	if hdr.ForkedFrom > 0 {
		m.out = append(m.out, Mark{Seq: hdr.ForkedFrom, Kind: "fork",
			Label: fmt.Sprintf("forked: the events up to here are copied from %s", termsafe.String(hdr.ParentSessionID))})
	}
}

func (m *marker) add(e session.Event) {
	resumeWrites := func(e session.Event) bool {
		return e.Kind == session.KindReconciled ||
			e.Kind == session.KindError && (e.Reason == "torn_tail_recovered" || e.Reason == "earlier_attempt_killed")
	}
	humanDecision := func(e session.Event) bool {
		switch e.Kind {
		case session.KindApprovalGranted, session.KindApprovalDenied, session.KindReconciled, session.KindToolResult:
			return true
		}
		return false
	}
	m.n++
	prev := m.prevSeq
	m.prevSeq = e.Seq
	if m.n == 1 {
		return
	}
	switch {
	case m.afterFinish && humanDecision(e):
	case m.afterFinish:
		m.out = append(m.out, Mark{Seq: e.Seq, Kind: "resume", Label: "resumed"})
		m.afterFinish = false
	case resumeWrites(e) && !m.prevResumeWrite:
		m.out = append(m.out, Mark{Seq: prev, Kind: "crash", Label: "crashed: the invocation's log stops here"},
			Mark{Seq: e.Seq, Kind: "resume", Label: "resumed after a crash"})
	}
	if e.Kind == session.KindSessionFinished {
		m.afterFinish = true
	}
	m.prevResumeWrite = resumeWrites(e)
	switch {
	case e.Kind == session.KindCompaction:
		m.out = append(m.out, Mark{Seq: e.Seq, Kind: "compaction", Label: fmt.Sprintf("compaction through seq %d", e.Through)})
	case e.Kind == session.KindInterrupted:
		m.out = append(m.out, Mark{Seq: e.Seq, Kind: "interrupted", Label: "interrupted: " + termsafe.String(e.Reason)})
	case e.Kind == session.KindError, e.Kind == session.KindBudgetExceeded,
		e.Kind == session.KindToolResult && e.Status == session.ResultError,
		e.Kind == session.KindModelCall && e.Error != "":
		m.out = append(m.out, Mark{Seq: e.Seq, Kind: "error", Label: termsafe.String(string(e.Kind) + ": " + firstLine(e.Reason+" "+e.Error, 80))})
	}
}

// finish adds the crash of a log that stops with no end at last.
func (m *marker) finish(status session.Status, last int64) []Mark {
	if status == session.StatusCrashed {
		m.out = append(m.out, Mark{Seq: last, Kind: "crash", Label: "crashed: the log stops here with no end"})
	}
	if m.out == nil {
		m.out = []Mark{}
	}
	return m.out
}

// textCap is the length strings are cut to: MaxText, or the longest cut
// (not under minText) that keeps the long strings of all events, so cut,
// within MaxTotal; of the events shown.
func textCap(in Input, shown func(yield func(session.Event))) int {
	maxText, total := in.MaxText, in.MaxTotal
	if maxText <= 0 {
		maxText = DefaultMaxText
	}
	if total <= 0 {
		total = DefaultMaxTotal
	}
	var lens []int
	shown(func(e session.Event) {
		for _, n := range []int{len(e.Text), len(e.Output), len(e.Summary), len(e.Args), len(e.Error), len(e.Evidence), len(e.Refusal), len(e.Raw)} {
			if n > minText {
				lens = append(lens, n)
			}
		}
	})
	fits := func(c int) bool {
		sum := 0
		for _, n := range lens {
			sum += min(n, c)
		}
		return sum <= total
	}
	if fits(maxText) {
		return maxText
	}
	lo, hi := minText, maxText // fits(lo) is assumed: below it, text is not worth showing
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// cleaner makes recorded strings safe and small.
type cleaner struct {
	max     int
	clipped int
}

// str makes s safe to show (termsafe) and cuts it to max bytes with a
// note of how much is left out.
func (c *cleaner) str(s string) string {
	s = termsafe.String(s)
	if len(s) <= c.max {
		return s
	}
	cut := c.max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	c.clipped++
	return s[:cut] + fmt.Sprintf("\n… [%d more bytes not embedded in this page; 'agentctl show SESSION --json' has the whole text]", len(s)-cut)
}

func (c *cleaner) event(e session.Event, t0 time.Time) Event {
	ev := Event{
		Seq: e.Seq, MS: e.TS.Sub(t0).Milliseconds(), Kind: c.str(string(e.Kind)), Lvl: level(e),
		Text: c.str(e.Text), Refusal: c.str(e.Refusal), FinishReason: c.str(e.FinishReason),
		Provider: c.str(e.Provider), Model: c.str(e.Model),
		In: e.InputTokens, Out: e.OutputTokens, CacheRead: e.CacheReadInputTokens, CacheWrite: e.CacheCreationInputTokens,
		Cost: e.CostUSD, LatencyMS: e.LatencyMS, ErrorType: c.str(e.ErrorType), Attempt: e.Attempt,
		CallID: c.str(e.CallID), Tool: c.str(e.Tool), Args: c.str(string(e.Args)), Output: c.str(e.Output),
		Artifact: c.str(e.Artifact), Scope: c.str(e.Scope), Through: e.Through, Summary: c.str(e.Summary),
		Sources: len(e.SourceSeqs), Status: c.str(e.Status), Outcome: c.str(e.Outcome), Reason: c.str(e.Reason),
		Evidence: c.str(e.Evidence), Error: c.str(e.Error), SpecPath: c.str(e.SpecPath),
	}
	if e.Kind == session.KindModelCall {
		ev.Purpose = c.str(attr(e.Attrs, "purpose"))
	}
	if e.Kind == session.KindSessionStarted {
		ev.Name, ev.ParentID, ev.ForkedFrom = c.str(e.Name), c.str(e.ParentSessionID), e.ForkedFrom
	}
	if e.Kind == session.KindAssistantMessage {
		// The calls are shown from Session.Calls; Args here would repeat them.
		ev.Args = ""
	}
	if len(e.Raw) > 0 {
		ev.Raw = c.str(string(e.Raw))
	}
	return ev
}

// level is the highlight of an event (see Event.Lvl).
func level(e session.Event) string {
	switch e.Kind {
	case session.KindError, session.KindBudgetExceeded:
		return "error"
	case session.KindToolResult:
		switch e.Status {
		case session.ResultError:
			return "error"
		case session.ResultCancelled, session.ResultDenied:
			return "warn"
		}
	case session.KindModelCall:
		if e.Error != "" {
			return "error"
		}
	case session.KindAssistantMessage:
		if e.Refusal != "" || e.FinishReason != "" {
			return "warn"
		}
	case session.KindEvaluation:
		if e.Outcome == "fail" {
			return "error"
		}
		if e.Outcome != "pass" {
			return "warn"
		}
	case session.KindSessionFinished:
		if e.Status == string(session.StatusFailed) {
			return "error"
		}
		if e.Status != string(session.StatusDone) {
			return "warn"
		}
	case session.KindReconciled:
		if e.Outcome == session.ReconciledNeedsHuman {
			return "warn"
		}
	case session.KindInterrupted, session.KindApprovalDenied, session.KindModelChanged, session.KindSpecChanged:
		return "warn"
	}
	if !e.Kind.Known() {
		return "warn"
	}
	return ""
}

func attr(attrs json.RawMessage, key string) string {
	if len(attrs) == 0 {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(attrs, &m) != nil {
		return ""
	}
	s, _ := m[key].(string)
	return s
}

func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if utf8.RuneCountInString(s) > n {
		r := []rune(s)
		s = string(r[:n]) + "…"
	}
	return s
}
