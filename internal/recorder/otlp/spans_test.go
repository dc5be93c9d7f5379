package otlp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentctl/agentctl/internal/session"
)

var t0 = time.Date(2026, 11, 28, 22, 14, 0, 0, time.UTC)

// twoRuns is a session that waits for an approval in its first run, is
// approved between runs, and finishes in a second run after a compaction.
func twoRuns() []session.Event {
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	evs := []session.Event{
		{Kind: session.KindSessionStarted, SessionID: "5e55100000000009", Name: "migrate", Provider: "openai", Model: "gpt-4o-mini", System: "be careful"},
		{Kind: session.KindUserMessage, Text: "migrate the db"},
		{Kind: session.KindAssistantMessage, Text: "reading", ToolCalls: []session.ToolCall{{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"path":"a"}`)}}},
		{Kind: session.KindModelCall, Provider: "openai", Model: "gpt-4o-mini-2024", LatencyMS: 800, InputTokens: 100, OutputTokens: 20, FinishReason: "tool_calls", CostUSD: 0.01},
		{Kind: session.KindToolIntent, CallID: "c1", Tool: "read_file", Args: json.RawMessage(`{"path":"a"}`)},
		{Kind: session.KindToolResult, CallID: "c1", Tool: "read_file", Status: "ok", Output: "contents", LatencyMS: 50},
		{Kind: session.KindAssistantMessage, ToolCalls: []session.ToolCall{{ID: "c2", Name: "bash", Args: json.RawMessage(`{"cmd":"migrate"}`)}}},
		{Kind: session.KindModelCall, Provider: "openai", Model: "gpt-4o-mini-2024", LatencyMS: 500, InputTokens: 150, OutputTokens: 10, FinishReason: "tool_calls"},
		{Kind: session.KindApprovalRequest, CallID: "c2", Tool: "bash", Reason: "rule bash"},
		{Kind: session.KindSessionFinished, Status: "awaiting_approval", Reason: "call c2 waits"},
		// written by `agentctl approve`, between runs
		{Kind: session.KindApprovalGranted, CallID: "c2", Tool: "bash", Scope: "once"},
		// the second run
		{Kind: session.KindToolIntent, CallID: "c2", Tool: "bash", IdempotencyKey: "k-7-0-bash"},
		{Kind: session.KindToolResult, CallID: "c2", Tool: "bash", Status: "error", Error: "exit status 1", LatencyMS: 900},
		{Kind: session.KindModelCall, Provider: "openai", Model: "gpt-4o-mini-2024", LatencyMS: 300, InputTokens: 90, OutputTokens: 30, Attrs: json.RawMessage(`{"purpose":"compaction"}`)},
		{Kind: session.KindCompaction, Through: 12, Summary: "so far", SourceSeqs: []int64{2, 3, 4}},
		{Kind: session.KindModelCall, Provider: "openai", Model: "gpt-4o-mini-2024", LatencyMS: 200, ErrorType: "server_error",
			Error: "openai: server_error: The server had an error (error event in the response stream)"},
		{Kind: session.KindError, Reason: "provider_error", ErrorType: "server_error", Error: "openai: server_error: The server had an error (error event in the response stream)"},
		{Kind: session.KindSessionFinished, Status: "failed", Reason: "provider_error: openai: server_error: The server had an error (error event in the response stream)"},
	}
	ms := []int{0, 10, 900, 910, 920, 980, 1600, 1610, 1620, 1630, 60000, 61000, 62000, 62400, 62410, 62700, 62710, 62720}
	for i := range evs {
		evs[i].Seq = int64(i + 1)
		evs[i].TS = at(ms[i])
	}
	return evs
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func byName(spans tracetest.SpanStubs) map[string][]tracetest.SpanStub {
	m := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		m[s.Name] = append(m[s.Name], s)
	}
	return m
}

func TestSpansTree(t *testing.T) {
	const sid = "5e55100000000009"
	spans := Spans(sid, twoRuns(), Options{})
	names := map[string]int{}
	ids := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		names[s.Name]++
		if s.SpanContext.TraceID() != TraceID(sid) {
			t.Errorf("%s: trace id = %s, want %s", s.Name, s.SpanContext.TraceID(), TraceID(sid))
		}
		if _, dup := ids[s.SpanContext.SpanID()]; dup {
			t.Errorf("%s: span id %s used twice", s.Name, s.SpanContext.SpanID())
		}
		ids[s.SpanContext.SpanID()] = s
		if got := attrs(s)[semconv.GenAIConversationIDKey].AsString(); got != sid {
			t.Errorf("%s: gen_ai.conversation.id = %q, want %q", s.Name, got, sid)
		}
		if s.EndTime.Before(s.StartTime) {
			t.Errorf("%s ends before it starts", s.Name)
		}
	}
	want := map[string]int{"invoke_agent migrate": 2, "chat gpt-4o-mini": 4, "execute_tool read_file": 1,
		"execute_tool bash": 1, "await_approval bash": 1, "compaction": 1}
	for n, c := range want {
		if names[n] != c {
			t.Errorf("spans named %q = %d, want %d (all: %v)", n, names[n], c, names)
		}
	}
	if len(spans) != 10 {
		t.Errorf("len(spans) = %d, want 10", len(spans))
	}
	m := byName(spans)
	run1, run2 := m["invoke_agent migrate"][0], m["invoke_agent migrate"][1]
	if run1.Parent.IsValid() || run2.Parent.IsValid() {
		t.Errorf("invoke_agent spans must be roots")
	}
	if !run1.StartTime.Equal(t0) || !run1.EndTime.Equal(t0.Add(1630*time.Millisecond)) {
		t.Errorf("run 1 = %v..%v, want the header to session_finished", run1.StartTime, run1.EndTime)
	}
	// run 2 starts with the first event after run 1 finished: the grant.
	if !run2.StartTime.Equal(t0.Add(60 * time.Second)) {
		t.Errorf("run 2 starts %v, want the approval_granted ts", run2.StartTime)
	}
	if run2.Status.Code != codes.Error || attrs(run2)[semconv.ErrorTypeKey].AsString() != "provider_error" {
		t.Errorf("run 2 status %v, error.type %v; want error, provider_error", run2.Status, attrs(run2)[semconv.ErrorTypeKey])
	}
	a1 := attrs(run1)
	if a1[semconv.GenAIOperationNameKey].AsString() != "invoke_agent" || a1[semconv.GenAIAgentNameKey].AsString() != "migrate" ||
		a1[semconv.GenAIUsageInputTokensKey].AsInt64() != 250 || a1[semconv.GenAIUsageOutputTokensKey].AsInt64() != 30 {
		t.Errorf("run 1 attributes = %v", run1.Attributes)
	}
	if run1.SpanKind != trace.SpanKindInternal {
		t.Errorf("invoke_agent kind = %v, want internal (the agent runs in process)", run1.SpanKind)
	}

	chat := m["chat gpt-4o-mini"][0]
	if chat.Parent.SpanID() != run1.SpanContext.SpanID() || chat.SpanKind != trace.SpanKindClient {
		t.Errorf("first chat: parent %s kind %v, want run 1, client", chat.Parent.SpanID(), chat.SpanKind)
	}
	if !chat.StartTime.Equal(t0.Add(110*time.Millisecond)) || !chat.EndTime.Equal(t0.Add(910*time.Millisecond)) {
		t.Errorf("first chat = %v..%v, want model_call.ts - latency_ms .. model_call.ts", chat.StartTime, chat.EndTime)
	}
	ca := attrs(chat)
	for k, want := range map[attribute.Key]string{
		semconv.GenAIOperationNameKey: "chat", semconv.GenAIProviderNameKey: "openai",
		semconv.GenAIRequestModelKey: "gpt-4o-mini", semconv.GenAIResponseModelKey: "gpt-4o-mini-2024",
	} {
		if got := ca[k].AsString(); got != want {
			t.Errorf("chat %s = %q, want %q", k, got, want)
		}
	}
	if ca[semconv.GenAIUsageInputTokensKey].AsInt64() != 100 || ca[semconv.GenAIUsageOutputTokensKey].AsInt64() != 20 {
		t.Errorf("chat usage = %v", chat.Attributes)
	}
	if got := ca[semconv.GenAIResponseFinishReasonsKey].AsStringSlice(); len(got) != 1 || got[0] != "tool_calls" {
		t.Errorf("finish reasons = %v", got)
	}
	if _, ok := ca[semconv.GenAIOutputMessagesKey]; ok {
		t.Errorf("content captured without the opt-in")
	}
	failed := m["chat gpt-4o-mini"][3]
	if failed.Status.Code != codes.Error || attrs(failed)[semconv.ErrorTypeKey].AsString() != "server_error" {
		t.Errorf("failed chat: status %v error.type %v", failed.Status, attrs(failed)[semconv.ErrorTypeKey])
	}

	tool := m["execute_tool read_file"][0]
	ta := attrs(tool)
	if tool.Parent.SpanID() != run1.SpanContext.SpanID() || !tool.StartTime.Equal(t0.Add(920*time.Millisecond)) ||
		!tool.EndTime.Equal(t0.Add(980*time.Millisecond)) || ta[semconv.GenAIToolNameKey].AsString() != "read_file" ||
		ta[semconv.GenAIToolCallIDKey].AsString() != "c1" || ta[semconv.GenAIOperationNameKey].AsString() != "execute_tool" {
		t.Errorf("read_file span = %+v", tool)
	}
	bash := m["execute_tool bash"][0]
	if bash.Parent.SpanID() != run2.SpanContext.SpanID() || bash.Status.Code != codes.Error ||
		attrs(bash)[semconv.ErrorTypeKey].AsString() != "exit_status" {
		t.Errorf("bash span: parent %s status %v attrs %v", bash.Parent.SpanID(), bash.Status, bash.Attributes)
	}
	wait := m["await_approval bash"][0]
	if wait.Parent.SpanID() != run1.SpanContext.SpanID() || !wait.StartTime.Equal(t0.Add(1620*time.Millisecond)) || !wait.EndTime.Equal(t0.Add(60*time.Second)) ||
		attrs(wait)["agentctl.approval.outcome"].AsString() != "granted" {
		t.Errorf("approval span = %+v", wait)
	}
	comp := m["compaction"][0]
	compChat := m["chat gpt-4o-mini"][2]
	if compChat.Parent.SpanID() != comp.SpanContext.SpanID() || comp.Parent.SpanID() != run2.SpanContext.SpanID() ||
		attrs(compChat)["agentctl.purpose"].AsString() != "compaction" {
		t.Errorf("compaction chat should sit under the compaction span under run 2")
	}
	if len(run2.Events) != 1 || run2.Events[0].Name != "error" {
		t.Errorf("run 2 events = %v, want the error event", run2.Events)
	}
}

func TestSpansDeterministic(t *testing.T) {
	a := Spans("s1", twoRuns(), Options{})
	b := Spans("s1", twoRuns(), Options{})
	c := Spans("s2", twoRuns(), Options{})
	if len(a) != len(b) {
		t.Fatalf("len = %d and %d", len(a), len(b))
	}
	for i := range a {
		if !a[i].SpanContext.Equal(b[i].SpanContext) || !a[i].Parent.Equal(b[i].Parent) || !a[i].StartTime.Equal(b[i].StartTime) {
			t.Errorf("span %d differs between two builds: %v vs %v", i, a[i].SpanContext, b[i].SpanContext)
		}
		if a[i].SpanContext.SpanID() == c[i].SpanContext.SpanID() {
			t.Errorf("span %d: same id for two sessions", i)
		}
	}
}

func TestSpansContentOptIn(t *testing.T) {
	spans := Spans("s1", twoRuns(), Options{CaptureContent: true})
	m := byName(spans)
	out := attrs(m["chat gpt-4o-mini"][0])[semconv.GenAIOutputMessagesKey].AsString()
	var msgs []struct {
		Role  string `json:"role"`
		Parts []struct {
			Type, Content, ID, Name string
		} `json:"parts"`
		FinishReason string `json:"finish_reason"`
	}
	if err := json.Unmarshal([]byte(out), &msgs); err != nil || len(msgs) != 1 || msgs[0].Role != "assistant" ||
		len(msgs[0].Parts) != 2 || msgs[0].Parts[1].Type != "tool_call" || msgs[0].Parts[1].Name != "read_file" {
		t.Errorf("gen_ai.output.messages = %s (%v)", out, err)
	}
	run := attrs(m["invoke_agent migrate"][0])
	if !strings.Contains(run[semconv.GenAISystemInstructionsKey].AsString(), "be careful") ||
		!strings.Contains(run[semconv.GenAIInputMessagesKey].AsString(), "migrate the db") {
		t.Errorf("run content = %v", m["invoke_agent migrate"][0].Attributes)
	}
	tool := attrs(m["execute_tool read_file"][0])
	if tool[semconv.GenAIToolCallArgumentsKey].AsString() != `{"path":"a"}` || tool[semconv.GenAIToolCallResultKey].AsString() != "contents" {
		t.Errorf("tool content = %v", m["execute_tool read_file"][0].Attributes)
	}
}

// A log cut anywhere yields spans whose ids are those of the whole log:
// exporting a running session and then the finished one only adds spans
// (except the open run's, which is re-sent with its real end).
func TestSpansPrefixStable(t *testing.T) {
	all := twoRuns()
	full := map[trace.SpanID]bool{}
	for _, s := range Spans("s", all, Options{}) {
		full[s.SpanContext.SpanID()] = true
	}
	for n := 1; n <= len(all); n++ {
		for _, s := range Spans("s", all[:n], Options{}) {
			if !full[s.SpanContext.SpanID()] {
				t.Errorf("prefix %d: span %s %s not in the full export", n, s.Name, s.SpanContext.SpanID())
			}
		}
	}
}

func TestErrorTypes(t *testing.T) {
	chats := []struct {
		e    session.Event
		want string
	}{
		{session.Event{ErrorType: "overloaded_error", Error: "anthropic: overloaded_error: Overloaded (error event in the response stream)"}, "overloaded_error"},
		// logs written before error_type: the type inside the message, not the status.
		{session.Event{Error: "anthropic: 529 overloaded_error: Overloaded"}, "overloaded_error"},
		{session.Event{Error: "openai: connection_error: dial tcp: refused"}, "connection_error"},
		{session.Event{Error: "interrupted"}, "cancelled"},
		{session.Event{Error: "POST /v1/chat: 503 Service Unavailable"}, "_OTHER"},
	}
	for _, tt := range chats {
		if got := chatErrorType(tt.e); got != tt.want {
			t.Errorf("chatErrorType(%q, %q) = %q, want %q", tt.e.ErrorType, tt.e.Error, got, tt.want)
		}
	}
	tools := []struct {
		status, err, want string
	}{
		{"cancelled", "cancelled", "cancelled"},
		{"denied", "denied by a human", "denied"},
		{"error", "exit status 2", "exit_status"},
		{"error", "timed out after 2m0s", "timeout"},
		{"error", "signal: killed", "killed"},
		{"error", "invalid arguments for bash: at /command: missing", "invalid_arguments"},
		{"error", `tool "bash" is not available in read-only mode; available: grep`, "unknown_tool"},
		{"error", "path escapes the workspace: ../x", "path_escape"},
		{"error", "something else", "_OTHER"},
	}
	for _, tt := range tools {
		if got := toolErrorType(session.Event{Status: tt.status, Error: tt.err}); got != tt.want {
			t.Errorf("toolErrorType(%s, %q) = %q, want %q", tt.status, tt.err, got, tt.want)
		}
	}
	servers := []struct {
		provider, spec string
		host           string
		port           int
	}{
		{"openai", `{"model":{"base_url":"http://127.0.0.1:8080/v1"}}`, "127.0.0.1", 8080},
		{"openai", `{"model":{}}`, "api.openai.com", 443},
		{"anthropic", ``, "api.anthropic.com", 443},
		{"openai", `{"model":{"base_url":"http://localhost/v1"}}`, "localhost", 80},
		{"scripted", `{"model":{}}`, "", 0},
	}
	for _, tt := range servers {
		if got := serverOf(tt.provider, json.RawMessage(tt.spec)); got.host != tt.host || got.port != tt.port {
			t.Errorf("serverOf(%s, %s) = %+v, want %s:%d", tt.provider, tt.spec, got, tt.host, tt.port)
		}
	}
}

// TestSubagentSpansNest: a subagent's header (parent_session_id,
// parent_seq, attrs root_session_id) puts every span of its log in the
// trace of the top session, each run under the parent's execute_tool
// span of the task call, with the id an export of the parent's log gives
// that span; a fork (forked_from) keeps its own trace.
func TestSubagentSpansNest(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	log := func(hdr session.Event) []session.Event {
		hdr.Seq, hdr.TS, hdr.Kind, hdr.Name = 1, t0, session.KindSessionStarted, "kid"
		return []session.Event{hdr,
			{Seq: 2, TS: t0.Add(time.Second), Kind: session.KindUserMessage, Text: "go"},
			{Seq: 3, TS: t0.Add(2 * time.Second), Kind: session.KindSessionFinished, Status: "done"}}
	}
	tests := []struct {
		name  string
		hdr   session.Event
		trace string
		under string // session whose execute_tool span at seq 7 is the parent, or ""
	}{
		{"child of the top session", session.Event{ParentSessionID: "top", ParentSeq: 7}, "top", "top"},
		{"grandchild", session.Event{ParentSessionID: "mid", ParentSeq: 7, Attrs: json.RawMessage(`{"tools":[],"root_session_id":"top"}`)}, "top", "mid"},
		{"fork", session.Event{ParentSessionID: "top", ForkedFrom: 7}, "kid", ""},
		// A fork of a subagent copies the subagent's parent_seq; it is a
		// fork all the same (recorder.HeaderLink).
		{"fork of a subagent", session.Event{ParentSessionID: "top", ParentSeq: 7, ForkedFrom: 9}, "kid", ""},
		{"top session", session.Event{}, "kid", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spans := Spans("kid", log(tt.hdr), Options{})
			if len(spans) != 1 {
				t.Fatalf("%d spans, want the one run", len(spans))
			}
			s := spans[0]
			if s.SpanContext.TraceID() != TraceID(tt.trace) {
				t.Errorf("trace = %s, want %s's", s.SpanContext.TraceID(), tt.trace)
			}
			want := trace.SpanID{}
			if tt.under != "" {
				want = SpanID(tt.under, "execute_tool", 7)
			}
			if s.Parent.SpanID() != want || (tt.under != "" && s.Parent.TraceID() != TraceID(tt.trace)) {
				t.Errorf("parent = %s/%s, want %s", s.Parent.TraceID(), s.Parent.SpanID(), want)
			}
		})
	}
}

// TestGeminiProviderName: a Gemini session's spans name the provider as
// the GenAI registry does (gcp.gemini, the generativelanguage API), not
// by agentctl's name for it.
func TestGeminiProviderName(t *testing.T) {
	evs := []session.Event{
		{Kind: session.KindSessionStarted, SessionID: "5e551000000000g1", Name: "g", Provider: "gemini", Model: "gemini-2.5-flash"},
		{Kind: session.KindUserMessage, Text: "hi"},
		{Kind: session.KindAssistantMessage, Text: "hello"},
		{Kind: session.KindModelCall, Provider: "gemini", Model: "gemini-2.5-flash", LatencyMS: 100, InputTokens: 10, OutputTokens: 2, FinishReason: "stop"},
		{Kind: session.KindSessionFinished, Status: "done"},
	}
	for i := range evs {
		evs[i].Seq, evs[i].TS = int64(i+1), t0.Add(time.Duration(i)*time.Second)
	}
	n := 0
	for _, s := range Spans("5e551000000000g1", evs, Options{}) {
		if v, ok := attrs(s)[semconv.GenAIProviderNameKey]; ok {
			n++
			if v.AsString() != "gcp.gemini" {
				t.Errorf("span %s: gen_ai.provider.name %q, want gcp.gemini", s.Name, v.AsString())
			}
		}
	}
	if n < 2 {
		t.Errorf("%d spans name the provider, want the agent's and the chat's", n)
	}
}
