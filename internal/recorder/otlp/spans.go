package otlp

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentctl/agentctl/internal/buildinfo"
	"github.com/agentctl/agentctl/internal/genai"
	"github.com/agentctl/agentctl/internal/modelapi"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// ScopeName is the instrumentation scope of every span and metric; its
// version is agentctl's (buildinfo.Version), like the resource's
// service.version. Backends deduplicate a re-export by span id, which
// derives from the log alone.
const ScopeName = "github.com/agentctl/agentctl/internal/recorder/otlp"

// Attributes the GenAI conventions do not define, under agentctl's own
// namespace.
const (
	attrStatus         = attribute.Key("agentctl.session.status")
	attrReason         = attribute.Key("agentctl.session.reason")
	attrSeq            = attribute.Key("agentctl.seq")
	attrCostUSD        = attribute.Key("agentctl.usage.cost_usd")
	attrPurpose        = attribute.Key("agentctl.purpose")
	attrRequestDigest  = attribute.Key("agentctl.request_digest")
	attrToolStatus     = attribute.Key("agentctl.tool.status")
	attrIdempotencyKey = attribute.Key("agentctl.tool.idempotency_key")
	attrApproval       = attribute.Key("agentctl.approval.outcome")
	attrScope          = attribute.Key("agentctl.approval.scope")
	attrThrough        = attribute.Key("agentctl.compaction.through")
	attrSources        = attribute.Key("agentctl.compaction.source_events")
	attrChildSession   = attribute.Key("agentctl.child_session_id")
	attrAttempt        = attribute.Key("agentctl.model_call.attempt")
	attrRefused        = attribute.Key("agentctl.response.refused")
)

// Span names of the spans the conventions do not define.
const (
	nameApproval   = "await_approval"
	nameCompaction = "compaction"
)

// TraceID is the trace id of a session: all its runs, chats and tool
// calls land in one trace, and exporting the session again yields the same
// id.
func TraceID(sessionID string) trace.TraceID {
	h := sha256.Sum256([]byte("agentctl/trace/" + sessionID))
	var id trace.TraceID
	copy(id[:], h[:16])
	if !id.IsValid() {
		id[15] = 1
	}
	return id
}

// SpanID is the id of the span of the given role opened by the event at
// seq of session sessionID.
func SpanID(sessionID, role string, seq int64) trace.SpanID {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seq))
	h := sha256.Sum256(append([]byte("agentctl/span/"+sessionID+"/"+role+"/"), b[:]...))
	var id trace.SpanID
	copy(id[:], h[:8])
	if !id.IsValid() {
		id[7] = 1
	}
	return id
}

// Options shape the spans built from a log.
type Options struct {
	// Resource is the resource of every span (service.name and friends).
	Resource *sdkresource.Resource
	// CaptureContent adds the opt-in content attributes: system
	// instructions, user and model messages, tool arguments and results.
	// They are copied from the log, which holds them already redacted.
	CaptureContent bool
}

// Chat describes one model call for the metrics.
type Chat struct {
	Provider, RequestModel, ResponseModel string
	InputTokens, OutputTokens             int64
	Duration                              time.Duration
	ErrorType                             string
}

// Spans builds the spans of a whole session log, in the order they end. A
// run still going (or crashed) gets its invoke_agent span ended at its
// last event; tool calls and approvals still open get none, so that a later
// export adds them rather than contradicting an earlier one.
func Spans(sessionID string, evs []session.Event, opts Options) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	b := newBuilder(sessionID, opts, func(s tracetest.SpanStub) { out = append(out, s) }, nil)
	for _, e := range evs {
		b.add(e)
	}
	b.close()
	return out
}

type openSpan struct {
	stub                  tracetest.SpanStub
	in, out               int64
	cacheRead, cacheWrite int64
	cost                  float64
	hasUsage              bool
}

// builder turns events into spans as they arrive. It keeps spans open until
// the event that ends them: a run until session_finished, a tool call until
// its tool_result, an approval wait until the decision. Not safe for
// concurrent use.
type builder struct {
	sid      string
	traceID  trace.TraceID
	opts     Options
	emit     func(tracetest.SpanStub)
	onChat   func(Chat)
	scope    instrumentation.Scope
	agent    string
	agentID  string
	provider string
	model    string
	system   string
	server   serverAddr

	// under is the span a subagent's runs nest under: its parent's
	// execute_tool span of the task call (invalid for a top session).
	under trace.SpanContext

	inv        *openSpan
	compaction *openSpan
	tools      map[string]*openSpan
	approvals  map[string]*openSpan
	assistant  *session.Event
	lastTS     time.Time
	// compacted: a compaction was recorded and no model call of the
	// conversation has answered since, so the next one's input is the
	// compacted view (gen_ai.conversation.compacted).
	compacted bool
}

func newBuilder(sid string, opts Options, emit func(tracetest.SpanStub), onChat func(Chat)) *builder {
	if opts.Resource == nil {
		opts.Resource = sdkresource.Empty()
	}
	return &builder{sid: sid, traceID: TraceID(sid), opts: opts, emit: emit, onChat: onChat,
		scope: instrumentation.Scope{Name: ScopeName, Version: buildinfo.Version},
		tools: map[string]*openSpan{}, approvals: map[string]*openSpan{}}
}

func (b *builder) spanContext(role string, seq int64) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: b.traceID, SpanID: SpanID(b.sid, role, seq),
		TraceFlags: trace.FlagsSampled})
}

func (b *builder) open(role string, seq int64, name string, kind trace.SpanKind, start time.Time, parent *openSpan, attrs ...attribute.KeyValue) *openSpan {
	s := &openSpan{stub: tracetest.SpanStub{
		Name: name, SpanContext: b.spanContext(role, seq), SpanKind: kind, StartTime: start,
		Attributes: append([]attribute.KeyValue{semconv.GenAIConversationID(b.sid)}, attrs...),
		Resource:   b.opts.Resource, InstrumentationScope: b.scope,
	}}
	if parent != nil {
		s.stub.Parent = parent.stub.SpanContext
		parent.stub.ChildSpanCount++
	}
	return s
}

// minDuration is the length of a span whose start and end were recorded at
// the same instant (a sub-millisecond call logs latency_ms 0): backends
// such as Jaeger rewrite a zero-length span, and the rewritten copy no
// longer deduplicates against a re-export.
const minDuration = time.Microsecond

func (b *builder) end(s *openSpan, at time.Time) {
	if !at.After(s.stub.StartTime) {
		at = s.stub.StartTime.Add(minDuration)
	}
	s.stub.EndTime = at
	b.emit(s.stub)
}

func (b *builder) invocation(e session.Event) *openSpan {
	if b.inv == nil {
		name := string(semconv.GenAIOperationNameInvokeAgent.Value.AsString())
		if b.agent != "" {
			name += " " + b.agent
		}
		attrs := []attribute.KeyValue{semconv.GenAIOperationNameInvokeAgent, semconv.GenAIProviderNameKey.String(modelapi.GenAIProviderName(b.provider)),
			semconv.GenAIRequestModel(b.model), attrSeq.Int64(e.Seq)}
		if b.agent != "" {
			attrs = append(attrs, semconv.GenAIAgentName(b.agent))
		}
		if b.agentID != "" {
			attrs = append(attrs, semconv.GenAIAgentID(b.agentID))
		}
		if b.opts.CaptureContent && b.system != "" {
			attrs = append(attrs, semconv.GenAISystemInstructionsKey.String(jsonString([]part{{Type: "text", Content: b.system}})))
		}
		b.inv = b.open("invoke_agent", e.Seq, name, trace.SpanKindInternal, e.TS, nil, attrs...)
		if b.under.IsValid() {
			b.inv.stub.Parent = b.under
		}
	}
	return b.inv
}

// nest puts a subagent's spans in the trace of the session at the top of
// its tree (the header's attrs root_session_id, else its parent), each
// run under the parent's execute_tool span of the task call whose intent
// is parent_seq: the ids an export of the parent's log gives that span.
func (b *builder) nest(hdr session.Event) {
	// One rule for what a header is a child of (a fork of a subagent
	// copies its parent_seq but is a fork, a trace of its own).
	if l := recorder.HeaderLink(hdr.SessionID, hdr); l.Relation != recorder.RelSubagent || l.ParentSeq <= 0 {
		return
	}
	root := hdr.ParentSessionID
	if len(hdr.Attrs) > 0 {
		var a struct {
			Root string `json:"root_session_id"`
		}
		if json.Unmarshal(hdr.Attrs, &a) == nil && a.Root != "" {
			root = a.Root
		}
	}
	b.traceID = TraceID(root)
	b.under = trace.NewSpanContext(trace.SpanContextConfig{TraceID: b.traceID,
		SpanID: SpanID(hdr.ParentSessionID, "execute_tool", hdr.ParentSeq), TraceFlags: trace.FlagsSampled})
}

func (b *builder) add(e session.Event) {
	if !e.TS.IsZero() {
		b.lastTS = e.TS
	}
	if e.Kind == session.KindSessionStarted {
		b.agent, b.provider, b.model, b.system = e.Name, e.Provider, e.Model, e.System
		b.agentID, b.server = e.SpecHash, serverOf(e.Provider, e.Spec)
		if e.Seq <= 1 {
			b.nest(e)
		}
	}
	inv := b.invocation(e)
	switch e.Kind {
	case session.KindUserMessage:
		if b.opts.CaptureContent {
			inv.stub.Attributes = append(inv.stub.Attributes, semconv.GenAIInputMessagesKey.String(
				jsonString([]message{{Role: "user", Parts: []part{{Type: "text", Content: e.Text}}}})))
		}
	case session.KindModelChanged:
		if e.Provider != b.provider {
			b.server = serverOf(e.Provider, nil)
		}
		b.provider, b.model = e.Provider, e.Model
		inv.stub.Events = append(inv.stub.Events, b.event(e, semconv.GenAIRequestModel(e.Model)))
	case session.KindAssistantMessage:
		ev := e
		b.assistant = &ev
	case session.KindModelCall:
		b.chat(e, inv)
	case session.KindCompaction:
		b.compacted = true
		s := b.compaction
		b.compaction = nil
		if s == nil {
			s = b.open(nameCompaction, e.Seq, nameCompaction, trace.SpanKindInternal, e.TS, inv)
		}
		s.stub.Attributes = append(s.stub.Attributes, attrThrough.Int64(e.Through), attrSources.Int(len(e.SourceSeqs)))
		b.end(s, e.TS)
	case session.KindToolIntent:
		s := b.open("execute_tool", e.Seq, "execute_tool "+e.Tool, trace.SpanKindInternal, e.TS, inv,
			semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(e.Tool), semconv.GenAIToolCallID(e.CallID),
			semconv.GenAIToolTypeKey.String("function"), attrSeq.Int64(e.Seq))
		if e.IdempotencyKey != "" {
			s.stub.Attributes = append(s.stub.Attributes, attrIdempotencyKey.String(e.IdempotencyKey))
		}
		if b.opts.CaptureContent && len(e.Args) > 0 {
			s.stub.Attributes = append(s.stub.Attributes, semconv.GenAIToolCallArgumentsKey.String(string(e.Args)))
		}
		b.tools[e.CallID] = s
	case session.KindToolResult:
		b.toolResult(e, inv)
	case session.KindApprovalRequest:
		// A child of the run that asked. The wait outlasts that run (it
		// stops, awaiting approval), so the child ends after its parent,
		// which OpenTelemetry allows; the tool call id ties it to its
		// execute_tool span.
		b.approvals[e.CallID] = b.open(nameApproval, e.Seq, nameApproval+" "+e.Tool, trace.SpanKindInternal, e.TS, inv,
			semconv.GenAIToolName(e.Tool), semconv.GenAIToolCallID(e.CallID), attrSeq.Int64(e.Seq))
	case session.KindApprovalGranted, session.KindApprovalDenied:
		s, ok := b.approvals[e.CallID]
		if !ok {
			inv.stub.Events = append(inv.stub.Events, b.event(e, semconv.GenAIToolCallID(e.CallID), attrScope.String(e.Scope)))
			break
		}
		delete(b.approvals, e.CallID)
		outcome := "granted"
		if e.Kind == session.KindApprovalDenied {
			outcome = "denied"
		}
		s.stub.Attributes = append(s.stub.Attributes, attrApproval.String(outcome))
		if e.Scope != "" {
			s.stub.Attributes = append(s.stub.Attributes, attrScope.String(e.Scope))
		}
		b.end(s, e.TS)
	case session.KindSessionFinished:
		b.finish(e, inv)
	case session.KindSessionStarted:
	default:
		// reconciled, interrupted, budget_exceeded, evaluation, error,
		// subagents and kinds from newer versions: moments of the run.
		inv.stub.Events = append(inv.stub.Events, b.event(e))
	}
}

func (b *builder) chat(e session.Event, inv *openSpan) {
	ca := chatAttrsOf(e)
	purpose := ca.Purpose
	parent := inv
	if purpose == "compaction" {
		b.compaction = b.open(nameCompaction, e.Seq, nameCompaction, trace.SpanKindInternal,
			e.TS.Add(-time.Duration(e.LatencyMS)*time.Millisecond), inv)
		parent = b.compaction
	}
	reqModel := b.model
	if reqModel == "" {
		reqModel = e.Model
	}
	name := string(semconv.GenAIOperationNameChat.Value.AsString())
	if reqModel != "" {
		name += " " + reqModel
	}
	s := b.open("chat", e.Seq, name, trace.SpanKindClient, e.TS.Add(-time.Duration(e.LatencyMS)*time.Millisecond), parent,
		semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(modelapi.GenAIProviderName(e.Provider)), semconv.GenAIRequestModel(reqModel),
		semconv.GenAIResponseModel(e.Model), semconv.GenAIUsageInputTokens(int(e.InputTokens)),
		semconv.GenAIUsageOutputTokens(int(e.OutputTokens)), attrSeq.Int64(e.Seq))
	if e.FinishReason != "" {
		s.stub.Attributes = append(s.stub.Attributes, semconv.GenAIResponseFinishReasons(e.FinishReason))
	}
	if b.server.host != "" {
		s.stub.Attributes = append(s.stub.Attributes, semconv.ServerAddress(b.server.host), semconv.ServerPort(b.server.port))
	}
	if e.ResponseID != "" {
		s.stub.Attributes = append(s.stub.Attributes, semconv.GenAIResponseID(e.ResponseID))
	}
	if e.MaxTokens > 0 {
		s.stub.Attributes = append(s.stub.Attributes, semconv.GenAIRequestMaxTokens(int(e.MaxTokens)))
	}
	// gen_ai.usage.input_tokens (above) already counts these.
	if e.CacheReadInputTokens > 0 {
		s.stub.Attributes = append(s.stub.Attributes, semconv.GenAIUsageCacheReadInputTokens(int(e.CacheReadInputTokens)))
	}
	if e.CacheCreationInputTokens > 0 {
		s.stub.Attributes = append(s.stub.Attributes, cacheWrites(e.CacheCreationInputTokens)...)
	}
	if ca.Reasoning > 0 {
		s.stub.Attributes = append(s.stub.Attributes, semconv.GenAIUsageReasoningOutputTokens(int(ca.Reasoning)))
	}
	if purpose == "" && (b.compacted || ca.Compacted) {
		// The first call of the conversation after a compaction, and
		// each try of it: a failed try leaves the next one to answer.
		// Only ever true, as the conventions say.
		s.stub.Attributes = append(s.stub.Attributes, attribute.Bool(genai.ConversationCompacted, true))
		if e.Error == "" {
			b.compacted = false
		}
	}
	if e.Attempt > 0 {
		s.stub.Attributes = append(s.stub.Attributes, attrAttempt.Int64(e.Attempt))
	}
	if e.CostUSD != 0 {
		s.stub.Attributes = append(s.stub.Attributes, attrCostUSD.Float64(e.CostUSD))
	}
	if purpose != "" {
		s.stub.Attributes = append(s.stub.Attributes, attrPurpose.String(purpose))
	}
	if e.RequestDigest != "" {
		s.stub.Attributes = append(s.stub.Attributes, attrRequestDigest.String(e.RequestDigest))
	}
	errType := ""
	if e.Error != "" {
		errType = chatErrorType(e)
		s.stub.Attributes = append(s.stub.Attributes, semconv.ErrorTypeKey.String(errType))
		s.stub.Status = sdktrace.Status{Code: codes.Error, Description: e.Error}
	}
	if b.assistant != nil && b.assistant.Refusal != "" && purpose == "" {
		// The refusal's text is content (opt-in, below); that it refused is not.
		s.stub.Attributes = append(s.stub.Attributes, attrRefused.Bool(true))
	}
	if b.opts.CaptureContent && b.assistant != nil && purpose == "" {
		s.stub.Attributes = append(s.stub.Attributes, semconv.GenAIOutputMessagesKey.String(outputMessages(*b.assistant, e.FinishReason)))
	}
	b.assistant = nil
	inv.in += e.InputTokens
	inv.out += e.OutputTokens
	inv.cacheRead += e.CacheReadInputTokens
	inv.cacheWrite += e.CacheCreationInputTokens
	inv.cost += e.CostUSD
	inv.hasUsage = true
	b.end(s, e.TS)
	if b.onChat != nil {
		b.onChat(Chat{Provider: e.Provider, RequestModel: reqModel, ResponseModel: e.Model, InputTokens: e.InputTokens,
			OutputTokens: e.OutputTokens, Duration: time.Duration(e.LatencyMS) * time.Millisecond, ErrorType: errType})
	}
}

func (b *builder) toolResult(e session.Event, inv *openSpan) {
	s, ok := b.tools[e.CallID]
	if ok {
		delete(b.tools, e.CallID)
	} else {
		// A call refused before dispatch (unknown tool, bad arguments) or
		// closed as cancelled has no intent: a span of its own latency.
		s = b.open("execute_tool", e.Seq, "execute_tool "+e.Tool, trace.SpanKindInternal,
			e.TS.Add(-time.Duration(e.LatencyMS)*time.Millisecond), inv,
			semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(e.Tool), semconv.GenAIToolCallID(e.CallID),
			semconv.GenAIToolTypeKey.String("function"), attrSeq.Int64(e.Seq))
	}
	s.stub.Attributes = append(s.stub.Attributes, attrToolStatus.String(e.Status))
	if e.Status != session.ResultOK {
		s.stub.Attributes = append(s.stub.Attributes, semconv.ErrorTypeKey.String(toolErrorType(e)))
		if e.Status == session.ResultError {
			s.stub.Status = sdktrace.Status{Code: codes.Error, Description: e.Error}
		}
	} else if b.opts.CaptureContent && e.Output != "" {
		s.stub.Attributes = append(s.stub.Attributes, semconv.GenAIToolCallResultKey.String(e.Output))
	}
	b.end(s, e.TS)
}

func (b *builder) finish(e session.Event, inv *openSpan) {
	inv.stub.Attributes = append(inv.stub.Attributes, attrStatus.String(e.Status))
	if e.Reason != "" {
		inv.stub.Attributes = append(inv.stub.Attributes, attrReason.String(e.Reason))
	}
	switch session.Status(e.Status) {
	case session.StatusFailed, session.StatusCrashed:
		// The reason's stable first word: provider_error, refused,
		// truncated, evaluation_failed, max_turns, setup_error.
		et := e.Status
		if i := strings.IndexByte(e.Reason, ':'); i > 0 {
			et = e.Reason[:i]
		} else if e.Reason != "" && !strings.ContainsAny(e.Reason, " \t") {
			et = e.Reason
		}
		inv.stub.Attributes = append(inv.stub.Attributes, semconv.ErrorTypeKey.String(et))
		inv.stub.Status = sdktrace.Status{Code: codes.Error, Description: e.Reason}
	case session.StatusBudgetExceeded:
		// The run did not do what it was asked: it was stopped.
		inv.stub.Attributes = append(inv.stub.Attributes, semconv.ErrorTypeKey.String(e.Status))
		inv.stub.Status = sdktrace.Status{Code: codes.Error, Description: e.Reason}
	}
	b.endInvocation(e.TS)
}

func (b *builder) endInvocation(at time.Time) {
	inv := b.inv
	b.inv = nil
	if inv.hasUsage {
		inv.stub.Attributes = append(inv.stub.Attributes, semconv.GenAIUsageInputTokens(int(inv.in)),
			semconv.GenAIUsageOutputTokens(int(inv.out)))
		if inv.cacheRead > 0 {
			inv.stub.Attributes = append(inv.stub.Attributes, semconv.GenAIUsageCacheReadInputTokens(int(inv.cacheRead)))
		}
		if inv.cacheWrite > 0 {
			inv.stub.Attributes = append(inv.stub.Attributes, cacheWrites(inv.cacheWrite)...)
		}
		if inv.cost != 0 {
			inv.stub.Attributes = append(inv.stub.Attributes, attrCostUSD.Float64(inv.cost))
		}
	}
	b.end(inv, at)
}

// close ends the run still open at the end of the log (a live run that
// stopped without session_finished, or a session still running).
func (b *builder) close() {
	if b.inv != nil {
		b.inv.stub.Attributes = append(b.inv.stub.Attributes, attrStatus.String(string(session.StatusRunning)))
		b.endInvocation(b.lastTS)
	}
}

// event records a moment of the run as a span event.
func (b *builder) event(e session.Event, extra ...attribute.KeyValue) sdktrace.Event {
	attrs := []attribute.KeyValue{attrSeq.Int64(e.Seq)}
	for _, kv := range []struct {
		k attribute.Key
		v string
	}{{"agentctl.status", e.Status}, {"agentctl.outcome", e.Outcome}, {"agentctl.reason", e.Reason},
		{"agentctl.error", e.Error}, {"agentctl.tool.name", e.Tool}, {"agentctl.tool.call_id", e.CallID}} {
		if kv.v != "" {
			attrs = append(attrs, kv.k.String(kv.v))
		}
	}
	if e.ChildSessionID != "" {
		attrs = append(attrs, attrChildSession.String(e.ChildSessionID))
	}
	attrs = append(attrs, extra...)
	return sdktrace.Event{Name: string(e.Kind), Time: e.TS, Attributes: attrs}
}

// chatAttrs is what a model_call's attrs say that its span carries.
type chatAttrs struct {
	// Purpose is why agentctl made the call when it is not the
	// conversation's next turn ("compaction": the summarizing call).
	Purpose string `json:"purpose"`
	// Compacted: a collected call whose emitter said its input was the
	// compacted conversation (its content, and so a compaction event, may
	// not have been captured).
	Compacted bool `json:"conversation_compacted"`
	// Reasoning is the reasoning output tokens a collected call reported.
	Reasoning int64 `json:"reasoning_output_tokens"`
}

func chatAttrsOf(e session.Event) chatAttrs {
	var a chatAttrs
	if len(e.Attrs) > 0 {
		_ = json.Unmarshal(e.Attrs, &a)
	}
	return a
}

// cacheWrites is the cache-write tokens under the current name
// (semantic-conventions-genai) and the released one beside it: every
// released version (to v1.41.1, and Go's semconv/v1.41.0) knows only
// gen_ai.usage.cache_creation.input_tokens, and a backend that reads the
// released conventions would lose the writes. Neither is added to the
// other: both are the same breakdown of gen_ai.usage.input_tokens.
func cacheWrites(n int64) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.Int64(genai.CacheWriteInputTokens, n), semconv.GenAIUsageCacheCreationInputTokens(int(n))}
}

// chatErrorType is the error.type of a failed model call: the provider's
// own error type as recorded (overloaded_error, rate_limit_error,
// connection_error), never a status read out of the message. Logs written
// before error_type was recorded carry the type inside the message
// ("anthropic: 529 overloaded_error: Overloaded"); it is read from there.
// "interrupted" (the run was cancelled mid-call) is "cancelled".
func chatErrorType(e session.Event) string {
	if e.ErrorType != "" {
		return e.ErrorType
	}
	if e.Error == "interrupted" {
		return "cancelled"
	}
	if typ := typeInMessage(e.Error); typ != "" {
		return typ
	}
	return semconv.ErrorTypeOther.Value.AsString()
}

// typeInMessage reads the error type out of a provider.Error message:
// "<provider>: [<status> ]<type>: <message>". "" when msg has another shape.
func typeInMessage(msg string) string {
	_, rest, ok := strings.Cut(msg, ": ")
	if !ok {
		return ""
	}
	head, _, _ := strings.Cut(rest, ": ")
	fields := strings.Fields(head)
	if len(fields) == 0 || len(fields) > 2 {
		return ""
	}
	typ := fields[len(fields)-1]
	if len(fields) == 2 {
		if _, err := strconv.Atoi(fields[0]); err != nil {
			return ""
		}
	}
	for _, r := range typ {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return ""
		}
	}
	return typ
}

// toolErrorType is the failure class of a tool call that did not succeed,
// from its recorded result: cancelled, denied, timeout, exit_status (the
// command exited non-zero), killed (by a signal), invalid_arguments (the
// schema check refused them), unknown_tool (not offered in this mode),
// path_escape, else _OTHER. Never the bare status "error".
func toolErrorType(e session.Event) string {
	switch e.Status {
	case session.ResultCancelled, session.ResultDenied:
		return e.Status
	}
	msg := e.Error
	switch {
	case strings.HasPrefix(msg, "timed out") || strings.Contains(msg, "deadline"):
		return "timeout"
	case strings.HasPrefix(msg, "exit status "):
		return "exit_status"
	case strings.HasPrefix(msg, "signal: "):
		return "killed"
	case strings.HasPrefix(msg, "invalid arguments"):
		return "invalid_arguments"
	case strings.Contains(msg, "is not available in") || strings.HasPrefix(msg, "unknown tool"):
		return "unknown_tool"
	case strings.HasPrefix(msg, "path escapes the workspace"):
		return "path_escape"
	}
	return semconv.ErrorTypeOther.Value.AsString()
}

// serverAddr is where a provider's requests go, for server.address and
// server.port on chat spans.
type serverAddr struct {
	host string
	port int
}

// serverOf reads the server from the recorded spec's model.base_url, else
// the provider's public endpoint; none for the scripted model, which runs
// in process.
func serverOf(provider string, spec json.RawMessage) serverAddr {
	var sp struct {
		Model struct {
			BaseURL string `json:"base_url"`
		} `json:"model"`
	}
	_ = json.Unmarshal(spec, &sp)
	base := modelapi.Base(provider, sp.Model.BaseURL)
	if base == "" {
		return serverAddr{}
	}
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" {
		return serverAddr{}
	}
	port, _ := strconv.Atoi(u.Port())
	if port == 0 {
		port = 443
		if u.Scheme == "http" {
			port = 80
		}
	}
	return serverAddr{host: u.Hostname(), port: port}
}

// The message shapes of the conventions' gen-ai-*-messages.json schemas.
type part struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

type message struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

func outputMessages(am session.Event, finish string) string {
	m := message{Role: "assistant", Parts: []part{}, FinishReason: finish}
	if m.FinishReason == "" {
		m.FinishReason = "stop"
	}
	if am.Refusal != "" {
		// A generic part: the conventions have no refusal part type.
		m.Parts = append(m.Parts, part{Type: "refusal", Content: am.Refusal})
	}
	if am.Text != "" {
		m.Parts = append(m.Parts, part{Type: "text", Content: am.Text})
	}
	for _, c := range am.ToolCalls {
		m.Parts = append(m.Parts, part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: c.Args})
	}
	return jsonString([]message{m})
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return strconv.Quote(err.Error())
	}
	return string(b)
}
