package session

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
)

// Roles of a projected message. They are provider-neutral; providers map
// them onto their own wire shapes.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one entry of the payload a provider receives. Seq is the log
// event the message came from (0 for the system prompt and for synthetic
// messages), so a reader can cite where each message rests.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
	Seq        int64      `json:"seq,omitempty"`
}

// Contents of synthetic tool messages that close a call with no result, so
// the next request is well formed (providers reject a tool call without a
// reply with a 400).
const (
	CancelledContent = `{"error":"cancelled_by_user"}`
	DeniedContent    = `{"error":"denied"}`
)

// SummaryPrefix opens the system message that stands for compacted events.
const SummaryPrefix = "Session so far: "

// SummaryPart is one compaction's summary while it is in force: the
// summary message is the prefix and the parts in order, each made from
// original events only (never from another part).
type SummaryPart struct {
	Seq     int64  `json:"seq"`
	Through int64  `json:"through"`
	Text    string `json:"text"`
}

// partSeparator joins the parts of a summary message.
const partSeparator = "\n\n"

// SummaryFrom is the first seq a compaction's summary was made from when
// it is one part of a chunked summary (its attrs {"summary_from": N}): the
// parts in force that end before it are kept before it. 0 for a summary
// that covers everything up to its through and replaces every earlier one
// (the only kind before chunked compaction).
func SummaryFrom(e Event) int64 {
	if e.Kind != KindCompaction || len(e.Attrs) == 0 {
		return 0
	}
	var a struct {
		From int64 `json:"summary_from"`
	}
	if json.Unmarshal(e.Attrs, &a) != nil || a.From < 0 {
		return 0
	}
	return a.From
}

// SummaryKeptFrom is, for a compaction that is one part of a chunked
// summary, the seq of the oldest earlier part it keeps in force (its attrs
// {"kept_from": N}): the parts recorded before N are dropped, so the
// summary message stays within the budget the runner holds it to. 0 keeps
// every earlier part that ends before summary_from (compactions recorded
// before summaries were bounded have no kept_from).
func SummaryKeptFrom(e Event) int64 {
	if e.Kind != KindCompaction || len(e.Attrs) == 0 {
		return 0
	}
	var a struct {
		Kept int64 `json:"kept_from"`
	}
	if json.Unmarshal(e.Attrs, &a) != nil || a.Kept < 0 {
		return 0
	}
	return a.Kept
}

// Project rebuilds the provider payload from a log: the system prompt, then
// (if a compaction exists) the latest summary and the first user message
// verbatim, then every conversational event after the compaction's through
// seq. Tool calls that never got a result are closed. It is the batch form
// of Projector; both give the same messages.
func Project(events []Event, system string) []Message {
	p := NewProjector(system)
	// Room for a message an event, as if there were no compaction: sized
	// once, the tail is not regrown (recopied, its old arrays left to the
	// GC) by doubling, which halved Project's time. Messages copies the
	// result out, so what a compaction leaves unused is garbage at once,
	// about an eighth of the events' own size.
	p.Reserve(len(events))
	for i := range events {
		p.add(&events[i])
	}
	return p.Messages()
}

// Projector is the incremental form of Project for the runner, which adds
// each event as it is recorded and asks for the payload once per turn. Add
// is amortised O(1); Messages is O(payload). It is not safe for concurrent
// use.
type Projector struct {
	system string

	firstUser *Message // the first user message, pinned verbatim
	summary   *Message // the summary parts in force, as a system message
	parts     []SummaryPart
	through   int64

	// tail holds the messages after the latest compaction in log order.
	tail []Message
	// pending maps the ids of tool calls of tail's assistant messages that
	// have no reply yet to the tool name.
	pending map[string]string
	// pendingOrder keeps pending ids in call order so closures are stable.
	pendingOrder []string
}

// NewProjector starts an empty projection with the given system prompt.
func NewProjector(system string) *Projector {
	return &Projector{
		system:  system,
		pending: map[string]string{},
	}
}

// Reserve makes room for n messages after the latest compaction, for a
// caller that folds many short sessions and knows roughly how long a
// context grows: the tail then does not grow from empty by doubling.
func (p *Projector) Reserve(n int) {
	p.tail = slices.Grow(p.tail, n)
}

// Add folds one event into the projection.
func (p *Projector) Add(e Event) { p.add(&e) }

// add is Add without copying the ~800-byte event (twice in Project's loop:
// the range value, then the argument); about a tenth of Project's time.
func (p *Projector) add(e *Event) {
	switch e.Kind {
	case KindUserMessage:
		m := Message{Role: RoleUser, Content: e.Text, Seq: e.Seq}
		if p.firstUser == nil {
			fu := m
			p.firstUser = &fu
		}
		p.closePending()
		p.tail = append(p.tail, m)
	case KindAssistantMessage:
		p.closePending()
		m := Message{Role: RoleAssistant, Content: e.Text, Seq: e.Seq}
		if m.Content == "" && e.Refusal != "" {
			// The model sees its own refusal, as the provider sent it.
			m.Content = e.Refusal
		}
		if len(e.ToolCalls) > 0 {
			m.ToolCalls = append([]ToolCall(nil), e.ToolCalls...)
		}
		p.tail = append(p.tail, m)
		for _, c := range e.ToolCalls {
			p.pending[c.ID] = c.Name
			p.pendingOrder = append(p.pendingOrder, c.ID)
		}
	case KindInterrupted:
		// Partial assistant text cut by an interruption is kept: the model
		// sees what it had said. Calls already requested stay pending and are
		// closed by the next message or at the end.
		if e.Text != "" {
			p.closePending()
			p.tail = append(p.tail, Message{Role: RoleAssistant, Content: e.Text, Seq: e.Seq})
		}
	case KindToolResult:
		p.reply(e.CallID, e.Tool, resultContent(*e), e.Seq)
	case KindReconciled:
		// A recovered or repeated intent carries the result it found; a
		// needs_human one has none, and the call is closed as cancelled.
		if e.Outcome == ReconciledRecovered || e.Outcome == ReconciledRepeated {
			p.reply(e.CallID, e.Tool, resultContent(*e), e.Seq)
		}
	case KindApprovalDenied:
		content := DeniedContent
		if e.Reason != "" {
			b, _ := json.Marshal(struct {
				Error  string `json:"error"`
				Reason string `json:"reason"`
			}{"denied", e.Reason})
			content = string(b)
		}
		p.reply(e.CallID, e.Tool, content, e.Seq)
	case KindCompaction:
		p.compact(*e)
	}
}

// resultContent is what the model reads for a tool result: the output, or
// the error when the tool failed without output.
func resultContent(e Event) string {
	switch {
	case e.Output != "":
		return e.Output
	case e.Error != "":
		b, _ := json.Marshal(map[string]string{"error": e.Error})
		return string(b)
	case e.Status == ResultCancelled:
		return CancelledContent
	}
	return ""
}

func (p *Projector) reply(callID, tool, content string, seq int64) {
	if _, ok := p.pending[callID]; !ok {
		// Orphan (its call was compacted away or never made), duplicate or
		// late after a synthetic closure: a provider would reject it.
		return
	}
	if tool == "" {
		tool = p.pending[callID]
	}
	delete(p.pending, callID)
	p.tail = append(p.tail, Message{Role: RoleTool, Content: content, ToolCallID: callID, Name: tool, Seq: seq})
}

// closePending answers every call still open with a cancellation, in call
// order, before a new user or assistant message is appended.
func (p *Projector) closePending() {
	if len(p.pending) == 0 {
		p.pendingOrder = p.pendingOrder[:0]
		return
	}
	p.tail = p.appendClosures(p.tail)
	clear(p.pending)
	p.pendingOrder = p.pendingOrder[:0]
}

func (p *Projector) appendClosures(out []Message) []Message {
	for _, id := range p.pendingOrder {
		name, ok := p.pending[id]
		if !ok {
			continue
		}
		out = append(out, Message{Role: RoleTool, Content: CancelledContent, ToolCallID: id, Name: name})
	}
	return out
}

// compact drops the tail up to through and installs the summary. Messages
// are in seq order, so the cut is a binary search; synthetic closures
// (seq 0) travel with the message before them.
func (p *Projector) compact(e Event) {
	if e.Through < p.through {
		return // an older compaction recorded late never replaces a newer one
	}
	p.through = e.Through
	var kept []SummaryPart
	if from := SummaryFrom(e); from > 0 {
		keptFrom := SummaryKeptFrom(e)
		for _, pt := range p.parts {
			if pt.Through < from && pt.Seq >= keptFrom {
				kept = append(kept, pt)
			}
		}
	}
	p.parts = append(kept, SummaryPart{Seq: e.Seq, Through: e.Through, Text: e.Summary})
	p.summary = summaryMessage(p.parts)
	cut := sort.Search(len(p.tail), func(i int) bool { return effectiveSeq(p.tail, i) > e.Through })
	// In place (no one else holds tail: State copies it); the vacated
	// slots are cleared so they keep no old message alive.
	n := copy(p.tail, p.tail[cut:])
	clear(p.tail[n:])
	p.tail = p.tail[:n]
	// Calls whose assistant message was cut are no longer answerable.
	known := map[string]bool{}
	for _, m := range p.tail {
		for _, c := range m.ToolCalls {
			known[c.ID] = true
		}
	}
	for id := range p.pending {
		if !known[id] {
			delete(p.pending, id)
		}
	}
	// Leading tool messages whose call was cut would be orphans.
	i := 0
	for i < len(p.tail) && p.tail[i].Role == RoleTool && !known[p.tail[i].ToolCallID] {
		i++
	}
	p.tail = p.tail[i:]
}

// summaryMessage is the system message of the parts in force: one part
// reads as a summary always has ("Session so far: <summary>").
func summaryMessage(parts []SummaryPart) *Message {
	texts := make([]string, len(parts))
	for i, pt := range parts {
		texts[i] = pt.Text
	}
	return &Message{Role: RoleSystem, Content: SummaryPrefix + strings.Join(texts, partSeparator), Seq: parts[len(parts)-1].Seq}
}

// effectiveSeq gives synthetic messages the seq of the message before them.
func effectiveSeq(ms []Message, i int) int64 {
	for ; i >= 0; i-- {
		if ms[i].Seq != 0 {
			return ms[i].Seq
		}
	}
	return 0
}

// Len is len(Messages()) without making them.
func (p *Projector) Len() int {
	n := len(p.tail) + len(p.pending)
	if p.system != "" {
		n++
	}
	if p.summary != nil {
		n++
		if p.firstUser != nil && p.firstUser.Seq <= p.through {
			n++
		}
	}
	return n
}

// Holds returns the message of the event at seq as Messages holds it now,
// or false when the projection no longer holds it (compacted away). It
// costs a binary search, where a search of Messages costs the whole
// projection: a reader that asks at every compaction of a log whose
// compactions drop nothing would otherwise do quadratic work.
func (p *Projector) Holds(seq int64) (Message, bool) {
	if p.summary != nil && p.firstUser != nil && p.firstUser.Seq <= p.through && p.firstUser.Seq == seq {
		return *p.firstUser, true
	}
	i := sort.Search(len(p.tail), func(i int) bool { return effectiveSeq(p.tail, i) >= seq })
	for ; i < len(p.tail) && effectiveSeq(p.tail, i) == seq; i++ {
		if p.tail[i].Seq == seq {
			return p.tail[i], true
		}
	}
	return Message{}, false
}

// Messages returns the payload as a provider would receive it now. Calls
// still pending are closed as cancelled at the end so the payload is well
// formed; the runner never asks while its own calls are in flight.
func (p *Projector) Messages() []Message {
	return p.AppendMessages(make([]Message, 0, len(p.tail)+3))
}

// AppendMessages appends what Messages returns to out: replay verify asks
// for the projection at every model call of a log, and reusing one slice
// spares it an allocation (and its garbage) per call.
func (p *Projector) AppendMessages(out []Message) []Message {
	if p.system != "" {
		out = append(out, Message{Role: RoleSystem, Content: p.system})
	}
	if p.summary != nil {
		out = append(out, *p.summary)
		if p.firstUser != nil && p.firstUser.Seq <= p.through {
			out = append(out, *p.firstUser)
		}
	}
	out = append(out, p.tail...)
	return p.appendClosures(out)
}

// Parts are the summary parts in force, oldest first (a copy).
func (p *Projector) Parts() []SummaryPart { return append([]SummaryPart(nil), p.parts...) }

// Pinned is what every request starts with whatever was compacted: the
// system prompt and the first user message (either may be missing).
func (p *Projector) Pinned() []Message {
	var out []Message
	if p.system != "" {
		out = append(out, Message{Role: RoleSystem, Content: p.system})
	}
	if p.firstUser != nil {
		out = append(out, *p.firstUser)
	}
	return out
}

// Through is the last seq replaced by the latest compaction (0 if none).
func (p *Projector) Through() int64 { return p.through }

// PendingCall is a tool call still waiting for its reply.
type PendingCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// ProjectorState is a Projector's whole state, so a checkpoint can restore
// it without folding the log from the start.
type ProjectorState struct {
	System    string        `json:"system,omitempty"`
	FirstUser *Message      `json:"first_user,omitempty"`
	Summary   *Message      `json:"summary,omitempty"`
	Parts     []SummaryPart `json:"parts,omitempty"`
	Through   int64         `json:"through,omitempty"`
	Tail      []Message     `json:"tail,omitempty"`
	Pending   []PendingCall `json:"pending,omitempty"`
}

// State captures the projector's state.
func (p *Projector) State() ProjectorState {
	s := ProjectorState{System: p.system, FirstUser: p.firstUser, Summary: p.summary, Through: p.through,
		Parts: append([]SummaryPart(nil), p.parts...), Tail: append([]Message(nil), p.tail...)}
	for _, id := range p.pendingOrder {
		if name, ok := p.pending[id]; ok {
			s.Pending = append(s.Pending, PendingCall{ID: id, Name: name})
		}
	}
	return s
}

// RestoreProjector rebuilds a projector from a captured state; adding the
// events after the capture gives what folding the whole log would.
func RestoreProjector(s ProjectorState) *Projector {
	p := NewProjector(s.System)
	p.firstUser, p.summary, p.through = s.FirstUser, s.Summary, s.Through
	p.parts = append([]SummaryPart(nil), s.Parts...)
	p.tail = append([]Message(nil), s.Tail...)
	for _, c := range s.Pending {
		p.pending[c.ID] = c.Name
		p.pendingOrder = append(p.pendingOrder, c.ID)
	}
	return p
}
