package otelsession

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentctl/agentctl/internal/modelapi"
	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// FormatOTLP is the header's imported_from of a session made from
// OpenTelemetry (collected or imported).
const FormatOTLP = "otlp"

// sess is one session the Ingester writes: its conversation so far, as
// the proxy keeps one (the last request's messages and its answer), so
// the next call's input adds only what is new.
type sess struct {
	id  string
	key string // the session.id / gen_ai.conversation.id it is named by; "" when grouped by trace
	// origin is the process that started it (origin): a keyless trace
	// joins it by content only from the same origin.
	origin string
	w      *recorder.Session
	// onDisk: the log exists (an earlier run wrote it): it is opened for
	// appending, not created.
	onDisk  bool
	history []session.Message
	tools   map[string]string // tool call id → tool name
	results map[string]bool   // tool call ids that have a tool_result
	calls   []session.ToolCall
	turns   int
	traces  map[string]bool // trace ids written into it
	spans   map[string]bool // trace_id/span_id of the spans written into it
	before  map[string]bool // the ones of those read from its log (load)
	used    uint64          // the write pass it was last written in
	usedAt  time.Time       // and when (Options.Clock): eviction waits for EvictIdle

	// Side threads (session.Route, the proxy's rule): system and
	// toolNames are the last model call's (the header's after a
	// restore); sides the side threads of the session, each a session of
	// its own (sidesRead: those on disk were looked for); sideOf and
	// sideN name the session a side thread belongs to.
	system    string
	toolNames []string
	sides     []*sess
	sidesRead bool
	sideOf    string
	sideN     int
}

func newSess(id, key string) *sess {
	return &sess{id: id, key: key, tools: map[string]string{}, results: map[string]bool{},
		traces: map[string]bool{}, spans: map[string]bool{}, before: map[string]bool{}}
}

// restore rebuilds the conversation of a session an earlier run wrote,
// and the origin its header kept.
func (s *sess) restore(evs []session.Event) {
	for _, e := range evs {
		switch e.Kind {
		case session.KindSessionStarted:
			var h struct {
				Origin map[string]string `json:"otel_origin"`
			}
			if json.Unmarshal(e.Attrs, &h) == nil {
				s.origin = originOf(h.Origin)
			}
			var a struct {
				Tools []string `json:"tools"`
			}
			_ = json.Unmarshal(e.Attrs, &a)
			s.system, s.toolNames = e.System, a.Tools
			s.sideOf, s.sideN = session.SideThreadOf(e)
		case session.KindAssistantMessage:
			s.noteCalls(e.ToolCalls)
		case session.KindToolResult:
			s.results[e.CallID] = true
		case session.KindModelCall:
			s.turns++
		}
	}
	// The conversation as the next request will carry it: the projection
	// without the closures it adds for calls that have no result yet (the
	// app's next request brings their results).
	h := session.Project(evs, "")
	for len(h) > 0 {
		m := h[len(h)-1]
		if m.Role != session.RoleTool || m.Content != session.CancelledContent || s.results[m.ToolCallID] {
			break
		}
		h = h[:len(h)-1]
	}
	s.history = h
}

func (s *sess) noteCalls(tcs []session.ToolCall) {
	for _, tc := range tcs {
		s.tools[tc.ID] = tc.Name
		s.calls = append(s.calls, tc)
	}
}

// callFor finds the call a tool span answers: by id, else the first
// unanswered call of that tool whose arguments are the span's, else, in
// order, the first unanswered call of that tool. An id no call of the
// session has (the model call's telemetry gave its calls none, and they
// have synthesized ones) is matched so too. The arguments decide where
// a framework runs a message's calls at once: LangChain's tool spans of
// one answer start in the same millisecond and end in any order.
func (s *sess) callFor(id, name string, args json.RawMessage) (string, string) {
	if id != "" {
		if n, ok := s.tools[id]; ok {
			if name == "" {
				name = n
			}
			return id, name
		}
	}
	first := -1
	for i, c := range s.calls {
		if s.results[c.ID] || (name != "" && c.Name != name) {
			continue
		}
		if sameArgs(c.Args, args) {
			return c.ID, c.Name
		}
		if first < 0 {
			first = i
		}
	}
	if first >= 0 {
		return s.calls[first].ID, s.calls[first].Name
	}
	return id, name
}

// sameArgs reports whether a tool span's arguments are a call's: the same
// JSON value, or, where the span gives its input as text (LangChain's
// TOOL span), that text as the value of the call's only argument.
func sameArgs(call, span json.RawMessage) bool {
	if len(call) == 0 || len(span) == 0 {
		return false
	}
	var c, sp any
	if json.Unmarshal(call, &c) != nil || json.Unmarshal(span, &sp) != nil {
		return false
	}
	if reflect.DeepEqual(c, sp) {
		return true
	}
	text, ok := sp.(string)
	obj, isObj := c.(map[string]any)
	if !ok || !isObj || len(obj) != 1 {
		return false
	}
	for _, v := range obj {
		if str, ok := v.(string); ok {
			return str == text
		}
		b, _ := json.Marshal(v)
		return string(b) == text
	}
	return false
}

// callIndex is the place of call id among the session's calls (len when
// it has none): tool results are written in the order the model made the
// calls, the order an app sends them back, not the order their spans ended.
func (s *sess) callIndex(id string) int {
	for i, c := range s.calls {
		if c.ID == id {
			return i
		}
	}
	return len(s.calls)
}

// args are the arguments of call id as the model gave them.
func (s *sess) args(id string) json.RawMessage {
	for i := len(s.calls) - 1; i >= 0; i-- {
		if s.calls[i].ID == id {
			return s.calls[i].Args
		}
	}
	return nil
}

// answered reports whether the call a tool span answers already has its
// result (the next call's input gave it, the tool span sorting after
// that call): by id, or, for a span without one, when every call of
// that tool has one.
func (s *sess) answered(id, name string) bool {
	if _, known := s.tools[id]; id != "" && (known || s.results[id]) {
		return s.results[id]
	}
	found := false
	for _, c := range s.calls {
		if name != "" && c.Name != name {
			continue
		}
		found = true
		if !s.results[c.ID] {
			return false
		}
	}
	return found
}

// sessionID derives a session's id from what groups it, so the same
// telemetry imported twice, or collected again after a restart, lands in
// the same session.
func sessionID(group string) string {
	h := sha256.Sum256([]byte("otlp\x00" + group))
	return hex.EncodeToString(h[:8])
}

// toolEvents are the events of one tool span and the place of the call
// it answers.
type toolEvents struct {
	call int
	evs  []session.Event
}

type mapped struct {
	sp *span
	c  call
}

// maxDecoded is how many decoded exports a write pass keeps: a pass may
// write thousands of traces, and a decoded export weighs twice its bytes.
const maxDecoded = 2

// keepDecoded notes b as decoded, letting the oldest decoding go past
// maxDecoded (its spans still pending decode it again).
func (in *Ingester) keepDecoded(b *wireBody) {
	for _, d := range in.decoded {
		if d == b {
			return
		}
	}
	if len(in.decoded) == maxDecoded {
		in.decoded[0].release()
		in.decoded = append(in.decoded[:0], in.decoded[1:]...)
	}
	in.decoded = append(in.decoded, b)
}

// writeTrace writes one settled trace into its session: the session the
// trace's spans name (session.id / gen_ai.conversation.id), else the one
// the trace was written into before, else the open session of the same
// origin (the client process, by its resource) whose conversation its
// first model call extends (session.Extends, the proxy's rule), else a
// new one.
func (in *Ingester) writeTrace(pt *pendingTrace) (err error) {
	for _, sp := range pt.spans {
		if b := sp.expand(); b != nil {
			in.keepDecoded(b)
		}
	}
	sort.SliceStable(pt.spans, func(i, j int) bool {
		a, b := pt.spans[i], pt.spans[j]
		if !a.Start.Equal(b.Start) {
			return a.Start.Before(b.Start)
		}
		return a.End.Before(b.End)
	})
	logsOf := map[string][]*logRec{}
	have := map[string]bool{}
	for _, sp := range pt.spans {
		have[sp.SpanID] = true
	}
	var late []*logRec
	for _, l := range pt.logs {
		if have[l.SpanID] {
			logsOf[l.SpanID] = append(logsOf[l.SpanID], l)
		} else {
			late = append(late, l)
		}
	}
	ms := make([]mapped, 0, len(pt.spans))
	key := ""
	for _, sp := range pt.spans {
		ms = append(ms, mapped{sp, read(sp, logsOf[sp.SpanID])})
		if key == "" {
			key = sessionKey(sp)
		}
	}
	if key == "" {
		for _, l := range pt.logs {
			if k := l.Attrs.str("session.id", "gen_ai.conversation.id"); k != "" {
				key = k
				break
			}
		}
	}

	s, err := in.sessionFor(pt.id, key, ms)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			in.forget(s)
		}
	}()
	// Its side threads on disk, and the spans they hold: a span of one
	// sent again is one the session has.
	if err := in.readSides(s); err != nil {
		return err
	}
	// Spans the session has already (sent again after it was evicted, or
	// after a restart) add nothing.
	fresh := ms[:0]
	for _, m := range ms {
		if !s.spans[m.sp.TraceID+"/"+m.sp.SpanID] {
			fresh = append(fresh, m)
		}
	}
	ms = fresh
	evs := make([]session.Event, 0, 2*len(ms)+2) // a call is about two events: grown once, not doubled from nothing
	var kept []any
	header := s.w == nil && !s.onDisk
	var sides []*sideWrite
	var tools []toolEvents // a run of tool spans, written in call order when it ends
	flush := func() {
		sort.SliceStable(tools, func(i, j int) bool { return tools[i].call < tools[j].call })
		for _, t := range tools {
			evs = append(evs, t.evs...)
		}
		tools = tools[:0]
	}
	for _, m := range ms {
		if m.c.op == opChat {
			flush()
		}
		switch m.c.op {
		case opChat:
			t, err := in.threadFor(s, m.c)
			if err != nil {
				return err
			}
			if t != s {
				sides = addSide(sides, t, m)
				continue
			}
			evs = append(evs, s.chat(m.sp, m.c)...)
		case opTool:
			if s.answered(m.c.toolCallID, m.c.toolName) {
				// The next call's input gave this result already (the
				// tool span sorted after it): kept, not recorded twice.
				kept = append(kept, describeSpan(m.sp, m.c.op, m.c.convention))
				continue
			}
			tevs := s.tool(m.sp, m.c)
			tools = append(tools, toolEvents{s.callIndex(tevs[0].CallID), tevs})
			continue
		default:
			kept = append(kept, describeSpan(m.sp, m.c.op, m.c.convention))
		}
	}
	flush()
	var lateOf map[string][]*logRec // span id → records of a span written before
	var lateOrder []string
	for _, l := range late {
		// A content record whose span is not in this trace's batch: its
		// span was written before (a late record), or never came.
		if s.before[l.TraceID+"/"+l.SpanID] {
			// Content of a span an earlier run wrote: a retry across the
			// restart (log records carry no id to tell a late one from
			// it), taken as delivered.
			continue
		}
		if s.spans[l.TraceID+"/"+l.SpanID] {
			if lateOf == nil {
				lateOf = map[string][]*logRec{}
			}
			if lateOf[l.SpanID] == nil {
				lateOrder = append(lateOrder, l.SpanID)
			}
			lateOf[l.SpanID] = append(lateOf[l.SpanID], l)
			continue
		}
		kept = append(kept, map[string]any{"log_record": l.Event, "trace_id": l.TraceID, "span_id": l.SpanID, "body": l.Body, "attributes": map[string]any(l.Attrs)})
	}
	for _, sid := range lateOrder {
		if more, ok := s.lateContent(lateOf[sid]); ok {
			evs = append(evs, more...)
			continue
		}
		for _, l := range lateOf[sid] {
			kept = append(kept, map[string]any{"late_log_record": l.Event, "trace_id": l.TraceID, "span_id": l.SpanID, "note": "arrived after its span was written, and the conversation went on past it: its content is not in the conversation"})
		}
	}
	if len(kept) > 0 {
		evs = keep(evs, kept)
	}
	for i := range evs {
		evs[i] = fit(evs[i])
	}
	if len(evs) == 0 && !header && len(sides) == 0 {
		return nil
	}
	if len(evs) > 0 || header {
		if err := in.open(s, pt, ms); err != nil {
			return err
		}
	}
	if len(evs) > 0 {
		if _, err := s.w.Append(evs...); err != nil {
			return fmt.Errorf("otelsession: write session %s: %w", s.id, err)
		}
	}
	for _, sw := range sides {
		if err := in.writeSide(sw, pt); err != nil {
			return err
		}
	}
	for _, sp := range pt.spans {
		s.spans[sp.TraceID+"/"+sp.SpanID] = true
	}
	s.traces[pt.id] = true
	s.used, s.usedAt = in.pass, in.opts.Clock()
	in.byTrace[pt.id] = s
	in.touched[s.id] = true
	return nil
}

// forget drops s from memory after a write into it failed: what the
// mapping added to its conversation was not written, and its writer may
// be failed. The next trace for it reads it again from its log, with a
// new writer.
func (in *Ingester) forget(s *sess) {
	if s.w != nil {
		s.w.Close()
		s.w = nil
	}
	if in.sessions[s.id] == s {
		delete(in.sessions, s.id)
	}
	if s.key != "" && in.byKey[s.key] == s {
		delete(in.byKey, s.key)
	}
	for t := range s.traces {
		if in.byTrace[t] == s {
			delete(in.byTrace, t)
		}
	}
}

// lateContent maps the content records of a model call whose span was
// written before they came (its model_call has no content) into the
// conversation: what its input adds and its answer, as chat would have
// written them, without a second model_call. Only while the
// conversation has not gone on past that call (its input extends the
// conversation so far); else ok is false and they are kept in attrs.
func (s *sess) lateContent(logs []*logRec) (evs []session.Event, ok bool) {
	first, last := logs[0].Time, logs[0].Time
	for _, l := range logs {
		if l.Time.Before(first) {
			first = l.Time
		}
		if l.Time.After(last) {
			last = l.Time
		}
	}
	sp := &span{TraceID: logs[0].TraceID, SpanID: logs[0].SpanID, Start: first, End: last, Attrs: attrs{"gen_ai.operation.name": "chat"}}
	c := read(sp, logs)
	if c.op != opChat || (!c.hasInput && !c.hasOutput) || (c.hasInput && len(s.history) > 0 && !session.Extends(s.history, c.input)) {
		return nil, false
	}
	if !c.hasInput {
		// An answer alone: it answers the conversation so far.
		c.input, c.hasInput = s.history, true
	}
	evs = s.chat(sp, c)
	evs = evs[:len(evs)-1] // the model_call: written with the span
	s.turns--
	for i := range evs {
		a := map[string]any{}
		_ = json.Unmarshal(evs[i].Attrs, &a)
		a["recorded_by"], a["late_content"], a["trace_id"], a["span_id"] = "otlp", true, sp.TraceID, sp.SpanID
		evs[i].Attrs = marshal(a)
	}
	return evs, true
}

// keep puts what maps to no event into the attrs of the first model_call
// or tool_result of the batch (otel_spans), or, when the batch has none,
// into an error event of reason unmapped_spans, so nothing is dropped
// without a note. What does not fit one record (thousands of database
// spans with long statements) goes on in more unmapped_spans events of
// at most keptChunkBytes each.
func keep(evs []session.Event, kept []any) []session.Event {
	chunks := chunkKept(kept)
	first := chunks[0]
	placed := false
	for i := range evs {
		if evs[i].Kind == session.KindModelCall || evs[i].Kind == session.KindToolResult {
			a := map[string]any{}
			_ = json.Unmarshal(evs[i].Attrs, &a)
			a["otel_spans"] = first
			evs[i].Attrs = marshal(a)
			placed = true
			break
		}
	}
	if placed {
		chunks = chunks[1:]
	}
	for i, c := range chunks {
		msg := fmt.Sprintf("%d spans or log records map to no event; kept in attrs.otel_spans", len(c))
		if len(chunks) > 1 || placed {
			msg = fmt.Sprintf("%d more spans or log records map to no event (part %d of what did not fit one record); kept in attrs.otel_spans", len(c), i+1)
		}
		evs = append(evs, session.Event{Kind: session.KindError, Reason: "unmapped_spans", Error: msg, Attrs: marshal(map[string]any{"otel_spans": c})})
	}
	return evs
}

// keptChunkBytes bounds the JSON of one event's otel_spans, well below
// recorder.MaxRecordSize.
const keptChunkBytes = 4 << 20

// chunkKept splits kept into runs whose JSON stays under keptChunkBytes
// (one item larger than that is a run of its own, cut by fit).
func chunkKept(kept []any) [][]any {
	var out [][]any
	var cur []any
	n := 0
	for _, k := range kept {
		b, _ := json.Marshal(k)
		if len(cur) > 0 && n+len(b) > keptChunkBytes {
			out = append(out, cur)
			cur, n = nil, 0
		}
		cur = append(cur, k)
		n += len(b) + 1
	}
	return append(out, cur)
}

// maxEventBytes is what one mapped event may weigh encoded: a record's
// limit less room for redaction (a marker may be longer than the secret
// it replaces) and the seq and ts the writer adds.
const maxEventBytes = recorder.MaxRecordSize - 1<<20

// fit makes ev fit one record: an event that does not (an attribute
// larger than a record, allowed by a raised MaxAttrBytes) has its longest
// strings cut, each with a note of how much was cut, and attrs
// cut_to_fit saying so. A trace is never refused for its size once
// acknowledged: this is the last resort, after keep split what it could.
func fit(ev session.Event) session.Event {
	b, err := session.Encode(ev)
	if err != nil || len(b) <= maxEventBytes {
		return ev
	}
	orig := ev
	cut := 0
	for limit := maxEventBytes / 2; limit >= 1<<10; limit /= 2 {
		ev, cut = orig, 0
		ev.MapStrings(func(s string) string {
			if len(s) <= limit {
				return s
			}
			i := limit
			for i > 0 && !utf8.RuneStart(s[i]) {
				i--
			}
			cut += len(s) - i
			return s[:i] + fmt.Sprintf("…[cut by agentctl: %d bytes more did not fit one record of the session log]", len(s)-i)
		})
		if b, err := session.Encode(ev); err == nil && len(b) <= maxEventBytes-(1<<10) {
			break
		}
	}
	a := map[string]any{}
	_ = json.Unmarshal(ev.Attrs, &a)
	a["cut_to_fit"] = map[string]any{"bytes_cut": cut, "note": "strings of this event were longer than one record of the session log holds; their ends are cut"}
	ev.Attrs = marshal(a)
	return ev
}

func marshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// sessionFor finds the session a trace goes to among the live ones, else
// on disk (an evicted one, or one an earlier run wrote: the id derives
// from the key or the trace), else the live session of its origin whose
// conversation it extends, else a new one.
func (in *Ingester) sessionFor(traceID, key string, ms []mapped) (*sess, error) {
	if key != "" {
		if s := in.byKey[key]; s != nil {
			return s, nil
		}
		return in.loadOrNew(sessionID("session "+key), key)
	}
	if s := in.byTrace[traceID]; s != nil {
		return s, nil
	}
	id := sessionID("trace " + traceID)
	if s := in.sessions[id]; s != nil {
		return s, nil
	}
	if s, err := in.load(id); s != nil || err != nil {
		return s, err
	}
	from := ""
	if len(ms) > 0 {
		from = origin(ms[0].sp)
	}
	for _, m := range ms {
		if m.c.op != opChat || !m.c.hasInput {
			continue
		}
		from = origin(m.sp)
		var best *sess
		for _, s := range in.sessions {
			if s.key == "" && s.origin == from && len(s.history) > 0 && session.Extends(s.history, m.c.input) && (best == nil || len(s.history) > len(best.history) || (len(s.history) == len(best.history) && s.id < best.id)) {
				best = s
			}
		}
		if best != nil {
			return best, nil
		}
		break
	}
	s, err := in.loadOrNew(id, "")
	if s != nil && !s.onDisk {
		s.origin = from
	}
	return s, err
}

func (in *Ingester) loadOrNew(id, key string) (*sess, error) {
	if s := in.sessions[id]; s != nil {
		return s, nil
	}
	s, err := in.load(id)
	if s != nil || err != nil {
		return s, err
	}
	s = newSess(id, key)
	in.live(s)
	return s, nil
}

// open makes s writable: the log an earlier run wrote, or a new one whose
// header says what the trace that starts it says.
func (in *Ingester) open(s *sess, pt *pendingTrace, ms []mapped) error {
	if s.w != nil {
		return nil
	}
	if s.onDisk {
		w, _, err := in.st.Open(s.id, in.opts.Recorder)
		if err != nil {
			return fmt.Errorf("otelsession: reopen session %s: %w", s.id, err)
		}
		s.w = w
		return nil
	}
	w, err := in.st.Create(fit(in.header(s, pt, ms)), in.opts.Recorder)
	if err != nil {
		return fmt.Errorf("otelsession: create session %s: %w", s.id, err)
	}
	s.w, s.onDisk = w, true
	return nil
}

// header is the session_started of a session the trace pt starts: the
// agent's name (gen_ai.agent.name, else the root span's name, else
// service.name), the first model call's provider, model and system
// prompt, and in attrs where it came from and what it lacks.
func (in *Ingester) header(s *sess, pt *pendingTrace, ms []mapped) session.Event {
	h := session.Event{Kind: session.KindSessionStarted, SessionID: s.id}
	var service string
	convs := map[string]bool{}
	captured, uncaptured, noDefs := false, false, false
	var tools []string
	for _, m := range ms {
		if h.Name == "" && m.c.agentName != "" {
			h.Name = m.c.agentName
		}
		if service == "" {
			service = m.sp.Resource.str("service.name")
		}
		if m.c.convention != "" {
			convs[m.c.convention] = true
		}
		if m.c.op == opChat {
			if h.Model == "" {
				h.Provider, h.Model, h.System = provider(m.c.provider), firstNonEmpty(m.c.reqModel, m.c.respModel), m.c.system
				tools = m.c.tools
				for _, x := range m.c.input {
					if x.Role == session.RoleUser {
						h.Text = x.Content
						break
					}
				}
			}
			if m.c.hasInput && len(m.c.tools) == 0 && usesTools(m.c) {
				noDefs = true
			}
			if m.c.hasInput || m.c.hasOutput {
				captured = true
			} else {
				uncaptured = true
			}
		}
	}
	if h.Name == "" {
		// The root span names the agent, unless it is a model call or a
		// tool call itself (an app whose every call is its own trace).
		for _, m := range ms {
			if m.sp.ParentID == "" && m.c.op != opChat && m.c.op != opTool {
				h.Name = m.sp.Name
				break
			}
		}
	}
	if h.Name == "" {
		h.Name = firstNonEmpty(service, "otlp")
	}
	if len(pt.spans) > 0 {
		h.TS = pt.spans[0].Start
	}
	a := map[string]any{
		"imported_from": FormatOTLP,
		"recorded_by":   "otlp",
		"trace_id":      pt.id,
	}
	if in.opts.Source != "" {
		a["otlp_source"] = in.opts.Source
	}
	if s.key != "" {
		a["source_session_id"] = s.key
	}
	if service != "" {
		a["service_name"] = service
	}
	if s.origin != "" {
		a["otel_origin"] = json.RawMessage(s.origin)
	}
	if len(convs) > 0 {
		var cs []string
		for c := range convs {
			cs = append(cs, c)
		}
		sort.Strings(cs)
		a["conventions"] = cs
	}
	if tools != nil {
		a["tools"] = tools
	}
	var not []string
	if uncaptured {
		not = append(not, "content", "request_digest")
		a["content_captured"] = captured
	}
	if noDefs {
		not = append(not, "tool_definitions", "request_digest")
	}
	not = append(not, "workspace")
	a["not_recorded"] = not
	user, tags, dropped := identity(ms)
	if len(tags) > 0 {
		a["tags"] = tags
	}
	if user != "" {
		a["user_id"] = user
	}
	if dropped > 0 {
		a["tags_dropped"] = dropped // keys no tag can have, or past session.MaxTags
	}
	h.Attrs = marshal(a)
	if s.sideOf != "" {
		h = session.SideThreadHeader(h, s.sideOf, s.sideN)
	}
	return h
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// provider names the provider as the rest of agentctl does: the GenAI
// registry's value (openai, anthropic), the Vercel AI SDK's "openai.chat"
// cut to its first part, the deprecated gen_ai.system values mapped.
func provider(p string) string {
	p = strings.ToLower(p)
	if i := strings.IndexByte(p, '.'); i > 0 && !strings.HasPrefix(p, "gcp.") && !strings.HasPrefix(p, "azure.") && !strings.HasPrefix(p, "aws.") && !strings.HasPrefix(p, "ibm.") {
		p = p[:i]
	}
	// A registered API's gen_ai.provider.name (Gemini's gcp.gemini) is
	// its provider as agentctl names it, so a collected call and a
	// proxied one are the same provider.
	for _, a := range modelapi.All() {
		if a.GenAIProvider != "" && a.GenAIProvider == p {
			return a.Provider
		}
	}
	switch p {
	case "vertex_ai":
		return "gcp.vertex_ai"
	case "az.ai.inference":
		return "azure.ai.inference"
	case "az.ai.openai":
		return "azure.ai.openai"
	}
	return p
}

// finishReason is the model_call's finish reason in agentctl's words
// (provider.Finish*: stop, tool_calls, length, content_filter), whatever
// the convention wrote.
func finishReason(f string) string {
	switch strings.ToLower(f) {
	case "", "unknown":
		return ""
	case "stop", "end_turn", "stop_sequence", "end":
		return "stop"
	case "tool_calls", "tool-calls", "tool_call", "tool_use", "function_call":
		return "tool_calls"
	case "length", "max_tokens":
		return "length"
	case "content_filter", "content-filter", "safety":
		return "content_filter"
	}
	return f
}

// chat maps a model call: what its input adds to the conversation (the
// user's messages, tool results no tool span gave), the answer and the
// model_call.
func (s *sess) chat(sp *span, c call) []session.Event {
	var evs []session.Event
	if c.hasInput {
		from := 0
		if len(s.history) > 0 {
			if session.Extends(s.history, c.input) {
				from = len(s.history)
			} else {
				k := 0
				for k < len(s.history) && k < len(c.input) && session.SameMessage(s.history[k], c.input[k]) {
					k++
				}
				from = k
				if k > 0 || s.turns > 0 {
					var sum []string
					for _, m := range c.input[k:] {
						if m.Content != "" {
							sum = append(sum, m.Content)
						}
					}
					ca := map[string]any{"recorded_by": "otlp", "kept_messages": k, "replaced_messages": len(s.history) - k, "new_messages": len(c.input) - k, "trace_id": sp.TraceID, "span_id": sp.SpanID}
					if c.compacted {
						ca["conversation_compacted"] = true // the emitter's word, not only the messages'
					}
					evs = append(evs, session.Event{TS: sp.Start, Kind: session.KindCompaction, Summary: strings.Join(sum, "\n\n"), Attrs: marshal(ca)})
					from = len(c.input)
				}
			}
		}
		for _, m := range c.input[from:] {
			switch m.Role {
			case session.RoleUser:
				evs = append(evs, session.Event{TS: sp.Start, Kind: session.KindUserMessage, Text: m.Content})
			case session.RoleTool:
				if s.results[m.ToolCallID] {
					continue // a tool span gave it
				}
				s.results[m.ToolCallID] = true
				evs = append(evs, session.Event{TS: sp.Start, Kind: session.KindToolResult, CallID: m.ToolCallID, Tool: s.tools[m.ToolCallID], Status: session.ResultOK, Output: m.Content,
					Attrs: marshal(map[string]any{"from_request": true})})
			case session.RoleAssistant:
				evs = append(evs, session.Event{TS: sp.Start, Kind: session.KindAssistantMessage, Text: m.Content, ToolCalls: m.ToolCalls,
					Attrs: marshal(map[string]any{"from_request": true})})
				s.noteCalls(m.ToolCalls)
			}
		}
		s.system, s.toolNames = c.system, c.tools
		s.history = append(append([]session.Message(nil), c.input...), c.output)
		// The history's assistant turn as the next request will carry it.
		if !c.hasOutput {
			s.history = s.history[:len(s.history)-1]
		}
	}
	finish := finishReason(c.finish)
	if c.hasOutput {
		a := session.Event{TS: sp.End, Kind: session.KindAssistantMessage, Text: c.output.Content, ToolCalls: c.output.ToolCalls, Refusal: c.refusal,
			InputTokens: c.in, OutputTokens: c.out}
		if finish == "length" || finish == "content_filter" {
			a.FinishReason = finish
		}
		evs = append(evs, a)
		s.noteCalls(c.output.ToolCalls)
	}
	if finish == "" && c.hasOutput {
		finish = "stop"
		if len(c.output.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	model := firstNonEmpty(c.respModel, c.reqModel)
	s.turns++
	attrs := map[string]any{"recorded_by": "otlp", "convention": c.convention, "trace_id": sp.TraceID, "span_id": sp.SpanID, "span_name": sp.Name, "turn": s.turns}
	if c.stream {
		attrs["stream"] = true
	}
	if !c.hasInput && !c.hasOutput {
		attrs["content_captured"] = false
	}
	if c.reasoning > 0 {
		attrs["reasoning_output_tokens"] = c.reasoning // no column holds it
	}
	if c.compacted {
		// Kept also when the content, and so a compaction event, is not
		// there: the export says it again (gen_ai.conversation.compacted).
		attrs["conversation_compacted"] = true
	}
	mc := session.Event{TS: sp.End, Kind: session.KindModelCall, Provider: provider(c.provider), Model: model,
		LatencyMS: sp.End.Sub(sp.Start).Milliseconds(), InputTokens: c.in, OutputTokens: c.out,
		CacheReadInputTokens: c.cacheRead, CacheCreationInputTokens: c.cacheMade,
		CostUSD:      pricing.CostOf(model, pricing.Usage{Input: c.in, CacheRead: c.cacheRead, CacheCreation: c.cacheMade, Output: c.out}),
		FinishReason: finish, MaxTokens: c.maxTokens, ResponseID: c.respID, Error: sp.Err, ErrorType: sp.Attrs.str("error.type"),
		Attrs: marshal(attrs)}
	if c.hasInput && (len(c.tools) > 0 || !usesTools(c)) {
		mc.RequestDigest = s.digest(c)
	} else if c.hasInput {
		attrs["tool_definitions_captured"] = false
		mc.Attrs = marshal(attrs)
	}
	return append(evs, mc)
}

// tool maps a tool span: a tool_intent when it started and a tool_result
// when it ended.
func (s *sess) tool(sp *span, c call) []session.Event {
	id, name := s.callFor(c.toolCallID, c.toolName, c.toolArgs)
	if id == "" {
		id = "otlp-" + sp.SpanID
	}
	s.results[id] = true
	a := map[string]any{"recorded_by": "otlp", "convention": c.convention, "trace_id": sp.TraceID, "span_id": sp.SpanID, "span_name": sp.Name}
	if c.toolCallID != "" && c.toolCallID != id {
		// The span's own id for the call, which the model call's
		// telemetry did not give (its calls have synthesized ids).
		a["source_call_id"] = c.toolCallID
	}
	if !c.hasResult {
		a["content_captured"] = false
	}
	st := session.ResultOK
	res := session.Event{TS: sp.End, Kind: session.KindToolResult, CallID: id, Tool: name, Output: c.toolResult,
		LatencyMS: sp.End.Sub(sp.Start).Milliseconds(), Attrs: marshal(a)}
	if sp.Err != "" {
		st, res.Error = session.ResultError, sp.Err
	} else if c.toolFailed {
		st, res.Error = session.ResultError, c.toolResult
	}
	res.Status = st
	args := c.toolArgs
	if len(args) == 0 || args[0] != '{' {
		// The model's arguments, where the span has none or not as an
		// object (LangChain's TOOL span gives its input as text).
		if ca := s.args(id); len(ca) > 0 {
			args = ca
		}
	}
	return []session.Event{
		{TS: sp.Start, Kind: session.KindToolIntent, CallID: id, Tool: name, Args: args},
		res,
	}
}

// usesTools reports whether a call's conversation shows tools in use
// (calls or results) although the span lists no tool definitions: the
// request offered tools the telemetry does not name, so its digest cannot
// be computed.
func usesTools(c call) bool {
	if len(c.output.ToolCalls) > 0 {
		return true
	}
	for _, m := range c.input {
		if len(m.ToolCalls) > 0 || m.Role == session.RoleTool {
			return true
		}
	}
	return false
}

// digest is the model_call's request_digest as the proxy computes it
// (proxy.Call.Digest): the system text as a first system message when
// there is one, the messages (a tool message named after its tool) and
// the offered tools' names.
func (s *sess) digest(c call) string {
	var msgs []session.Message
	if c.system != "" {
		msgs = append(msgs, session.Message{Role: session.RoleSystem, Content: c.system})
	}
	for _, m := range c.input {
		if m.Role == session.RoleTool && m.Name == "" {
			m.Name = s.tools[m.ToolCallID]
		}
		msgs = append(msgs, m)
	}
	tools := c.tools
	if tools == nil {
		tools = []string{}
	}
	return session.Digest(msgs, tools)
}
