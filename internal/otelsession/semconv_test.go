package otelsession

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/agentctl/agentctl/internal/genai"
	"github.com/agentctl/agentctl/internal/otelsession/oteltest"
	"github.com/agentctl/agentctl/internal/session"
)

// Where a gen_ai.* name the mapping reads comes from.
type nameOrigin int

const (
	fromRegistry   nameOrigin = iota // an attribute of v1.41.1 or of semantic-conventions-genai
	fromEvents                       // an event of either
	fromDeprecated                   // deprecated in v1.41.1's registry, still sent by earlier emitters
	fromAfter                        // added upstream after the corpus snapshot: genai.AfterV141
	// fromEarlierEvents are the per-message events and their attribute
	// prefix of the conventions before v1.37 (deprecated/events-deprecated.yaml
	// upstream; not in the corpus, so not checked against it).
	fromEarlierEvents
	// fromOpenLLMetry are OpenLLMetry's own names under gen_ai.* (flattened
	// prompts and completions, its cache counters): never the conventions'.
	fromOpenLLMetry
)

// genAIRead classifies every gen_ai.* string the package's code holds
// (TestGenAINamesInCorpus finds them in the source).
var genAIRead = map[string]nameOrigin{
	"gen_ai.agent.name":                         fromRegistry,
	"gen_ai.conversation.id":                    fromRegistry,
	"gen_ai.input.messages":                     fromRegistry,
	"gen_ai.operation.name":                     fromRegistry,
	"gen_ai.output.messages":                    fromRegistry,
	"gen_ai.provider.name":                      fromRegistry,
	"gen_ai.request.max_tokens":                 fromRegistry,
	"gen_ai.request.model":                      fromRegistry,
	"gen_ai.request.stream":                     fromRegistry,
	"gen_ai.response.finish_reasons":            fromRegistry,
	"gen_ai.response.id":                        fromRegistry,
	"gen_ai.response.model":                     fromRegistry,
	"gen_ai.system_instructions":                fromRegistry,
	"gen_ai.tool.call.arguments":                fromRegistry,
	"gen_ai.tool.call.id":                       fromRegistry,
	"gen_ai.tool.call.result":                   fromRegistry,
	"gen_ai.tool.definitions":                   fromRegistry,
	"gen_ai.tool.name":                          fromRegistry,
	"gen_ai.usage.cache_creation.input_tokens":  fromRegistry,
	"gen_ai.usage.cache_read.input_tokens":      fromRegistry,
	"gen_ai.usage.input_tokens":                 fromRegistry,
	"gen_ai.usage.output_tokens":                fromRegistry,
	"gen_ai.usage.reasoning.output_tokens":      fromRegistry,
	"gen_ai.client.inference.operation.details": fromEvents,
	"gen_ai.system":                             fromDeprecated,
	"gen_ai.prompt":                             fromDeprecated,
	"gen_ai.usage.prompt_tokens":                fromDeprecated,
	"gen_ai.usage.completion_tokens":            fromDeprecated,
	genai.CacheWriteInputTokens:                 fromAfter,
	genai.ConversationCompacted:                 fromAfter,
	"gen_ai.system.message":                     fromEarlierEvents,
	"gen_ai.user.message":                       fromEarlierEvents,
	"gen_ai.assistant.message":                  fromEarlierEvents,
	"gen_ai.tool.message":                       fromEarlierEvents,
	"gen_ai.choice":                             fromEarlierEvents,
	"gen_ai.content.prompt":                     fromEarlierEvents,
	"gen_ai.event.":                             fromEarlierEvents,
	"gen_ai.prompt.":                            fromOpenLLMetry,
	"gen_ai.prompt.0.role":                      fromOpenLLMetry,
	"gen_ai.completion.":                        fromOpenLLMetry,
	"gen_ai.usage.cache_read_input_tokens":      fromOpenLLMetry,
	"gen_ai.usage.cache_creation_input_tokens":  fromOpenLLMetry,
}

// TestGenAINamesInCorpus: every gen_ai.* name the mapping reads is one the
// conventions define, in v1.41.1 or in semantic-conventions-genai (the
// corpus copies, parsed), or one the table says is not theirs and why. A
// misspelt name (gen_ai.usage.cache_write.input_token) is in neither and
// fails here, where a span carrying the real name would only have lost
// its tokens silently.
func TestGenAINamesInCorpus(t *testing.T) {
	conv := oteltest.LoadConventions(t)
	used := literals(t, ".")
	for _, s := range genai.AfterV141 {
		used[s.Name] = true
	}
	for name := range used {
		o, ok := genAIRead[name]
		if !ok {
			t.Errorf("%q is read but not classified in genAIRead (is it a typo?)", name)
			continue
		}
		switch o {
		case fromRegistry:
			if len(conv.Attributes[name]) == 0 {
				t.Errorf("%q: in neither registry.yaml (v1.41.1, semantic-conventions-genai)", name)
			}
		case fromEvents:
			if len(conv.Events[name]) == 0 {
				t.Errorf("%q: in neither events.yaml", name)
			}
		case fromDeprecated:
			if !conv.Deprecated[name] {
				t.Errorf("%q: not a deprecated attribute of v1.41.1's registry", name)
			}
		case fromAfter, fromOpenLLMetry, fromEarlierEvents:
			if len(conv.Attributes[name]) > 0 || len(conv.Events[name]) > 0 {
				t.Errorf("%q is in the corpus conventions (%v): classify it as theirs", name, conv.Attributes[name])
			}
		}
	}
	for name := range genAIRead {
		if !used[name] {
			t.Errorf("genAIRead lists %q, which the code no longer reads", name)
		}
	}
	// The renamed attributes' released names stay read.
	for _, s := range genai.AfterV141 {
		if s.Replaces == "" {
			continue
		}
		if !conv.Has(oteltest.V141, s.Replaces) || !conv.Has(oteltest.GenAIRepo, s.Replaces) {
			t.Errorf("%s replaces %s, which the corpus versions do not both define", s.Name, s.Replaces)
		}
		if !used[s.Replaces] {
			t.Errorf("%s replaces %s, which the mapping no longer reads", s.Name, s.Replaces)
		}
	}
}

// literals is every string constant starting "gen_ai." in the non-test Go
// files of dir.
func literals(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(s, "gen_ai.") {
					out[s] = true
				}
			}
			return true
		})
	}
	if len(out) < 20 {
		t.Fatalf("found %d gen_ai.* strings in %s: the scan is broken", len(out), dir)
	}
	return out
}

// anyValue is the OTLP form of a Go value (a structured attribute, as an
// SDK that can put structures on attributes and events sends it).
func otlpValue(v any) *commonpb.AnyValue {
	switch x := v.(type) {
	case string:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: x}}
	case int:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(x)}}
	case bool:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: x}}
	case []string:
		var vs []*commonpb.AnyValue
		for _, s := range x {
			vs = append(vs, otlpValue(s))
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
	case []any:
		var vs []*commonpb.AnyValue
		for _, e := range x {
			vs = append(vs, otlpValue(e))
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var kvs []*commonpb.KeyValue
		for _, k := range keys {
			kvs = append(kvs, &commonpb.KeyValue{Key: k, Value: otlpValue(x[k])})
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: kvs}}}
	}
	panic(fmt.Sprintf("otlpValue: %T", v))
}

// kvs turns name, value pairs into OTLP attributes.
func kvs(pairs map[string]any) []*commonpb.KeyValue {
	keys := make([]string, 0, len(pairs))
	for k := range pairs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []*commonpb.KeyValue
	for _, k := range keys {
		out = append(out, &commonpb.KeyValue{Key: k, Value: otlpValue(pairs[k])})
	}
	return out
}

var semconvStart = time.Date(2026, 5, 11, 9, 0, 0, 0, time.UTC)

// chatExport is one inference span (chat, the model named, the
// conversation keyed) with attrs besides, n seconds into the test's hour.
func chatExport(trace string, n int, attrs map[string]any) export {
	base := map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic",
		"gen_ai.request.model": "claude-sonnet-4-6", "gen_ai.conversation.id": "conv-" + trace}
	for k, v := range attrs {
		base[k] = v
	}
	start := semconvStart.Add(time.Duration(n) * time.Second)
	sp := &tracepb.Span{TraceId: []byte(fmt.Sprintf("%-16s", trace)), SpanId: []byte(fmt.Sprintf("span%04d", n)), Name: "chat claude-sonnet-4-6",
		Kind: tracepb.Span_SPAN_KIND_CLIENT, StartTimeUnixNano: uint64(start.UnixNano()), EndTimeUnixNano: uint64(start.Add(500 * time.Millisecond).UnixNano()),
		Attributes: kvs(base)}
	return export{name: fmt.Sprintf("span %d", n), traces: &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: kvs(map[string]any{"service.name": "semconv-test"})},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{sp}}}}}}}
}

// detailsExport is the gen_ai.client.inference.operation.details event of
// the span chatExport(trace, n) makes, its attributes structured.
func detailsExport(trace string, n int, attrs map[string]any) export {
	at := semconvStart.Add(time.Duration(n)*time.Second + 400*time.Millisecond)
	rec := &logspb.LogRecord{TimeUnixNano: uint64(at.UnixNano()), EventName: "gen_ai.client.inference.operation.details",
		TraceId: []byte(fmt.Sprintf("%-16s", trace)), SpanId: []byte(fmt.Sprintf("span%04d", n)), Attributes: kvs(attrs)}
	return export{name: fmt.Sprintf("log %d", n), logs: &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource:  &resourcepb.Resource{Attributes: kvs(map[string]any{"service.name": "semconv-test"})},
		ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{rec}}}}}}}
}

func modelCalls(evs []session.Event) []session.Event {
	var out []session.Event
	for _, e := range evs {
		if e.Kind == session.KindModelCall {
			out = append(out, e)
		}
	}
	return out
}

func attrsOf(t *testing.T, e session.Event) map[string]any {
	t.Helper()
	a := map[string]any{}
	if len(e.Attrs) > 0 {
		if err := json.Unmarshal(e.Attrs, &a); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// TestGenAIUsageNames: a model call's tokens, finish reason and
// compaction are read whichever convention version named them, the newer
// name first when a span carries both (an SDK in transition sends both).
// The names come from the corpus's registries (a name a version does not
// define fails the test before any span is built).
func TestGenAIUsageNames(t *testing.T) {
	conv := oteltest.LoadConventions(t)
	in := func(version, name string) string {
		t.Helper()
		if !conv.Has(version, name) {
			t.Fatalf("%s does not define %s", version, name)
		}
		return name
	}
	v141, repo := oteltest.V141, oteltest.GenAIRepo
	cases := []struct {
		name  string
		attrs map[string]any
		check func(t *testing.T, mc session.Event, a map[string]any)
	}{
		{"v1.41 cache names", map[string]any{in(v141, "gen_ai.usage.input_tokens"): 100, in(v141, "gen_ai.usage.output_tokens"): 10,
			in(v141, "gen_ai.usage.cache_read.input_tokens"): 40, in(v141, "gen_ai.usage.cache_creation.input_tokens"): 20},
			func(t *testing.T, mc session.Event, a map[string]any) {
				if mc.InputTokens != 100 || mc.OutputTokens != 10 || mc.CacheReadInputTokens != 40 || mc.CacheCreationInputTokens != 20 {
					t.Errorf("tokens %d/%d cache %d/%d, want 100/10 cache 40/20", mc.InputTokens, mc.OutputTokens, mc.CacheReadInputTokens, mc.CacheCreationInputTokens)
				}
			}},
		{"cache_write alone", map[string]any{in(repo, "gen_ai.usage.input_tokens"): 100, genai.CacheWriteInputTokens: 30},
			func(t *testing.T, mc session.Event, a map[string]any) {
				if mc.CacheCreationInputTokens != 30 {
					t.Errorf("cache writes %d, want 30 (from %s)", mc.CacheCreationInputTokens, genai.CacheWriteInputTokens)
				}
			}},
		{"both cache names: the newer wins", map[string]any{in(repo, "gen_ai.usage.cache_creation.input_tokens"): 20, genai.CacheWriteInputTokens: 30},
			func(t *testing.T, mc session.Event, a map[string]any) {
				if mc.CacheCreationInputTokens != 30 {
					t.Errorf("cache writes %d, want 30: %s is the current name", mc.CacheCreationInputTokens, genai.CacheWriteInputTokens)
				}
			}},
		{"reasoning tokens", map[string]any{in(repo, "gen_ai.usage.output_tokens"): 90, in(v141, "gen_ai.usage.reasoning.output_tokens"): 64},
			func(t *testing.T, mc session.Event, a map[string]any) {
				if mc.OutputTokens != 90 || a["reasoning_output_tokens"] != float64(64) {
					t.Errorf("output %d, attrs %v: want 90 with reasoning_output_tokens 64", mc.OutputTokens, a)
				}
			}},
		{"finish reasons", map[string]any{in(repo, "gen_ai.response.finish_reasons"): []string{"length"}},
			func(t *testing.T, mc session.Event, a map[string]any) {
				if mc.FinishReason != "length" {
					t.Errorf("finish %q, want length", mc.FinishReason)
				}
			}},
		{"compacted, content not captured", map[string]any{genai.ConversationCompacted: true},
			func(t *testing.T, mc session.Event, a map[string]any) {
				if a["conversation_compacted"] != true {
					t.Errorf("attrs %v: want conversation_compacted true", a)
				}
			}},
		{"Gemini's API is agentctl's gemini", map[string]any{in(repo, "gen_ai.provider.name"): "gcp.gemini", in(repo, "gen_ai.request.model"): "gemini-2.5-flash"},
			func(t *testing.T, mc session.Event, a map[string]any) {
				if mc.Provider != "gemini" {
					t.Errorf("provider %q, want gemini (the provider: gemini a spec names)", mc.Provider)
				}
			}},
		{"compacted false says nothing", map[string]any{genai.ConversationCompacted: false},
			func(t *testing.T, mc session.Event, a map[string]any) {
				if _, ok := a["conversation_compacted"]; ok {
					t.Errorf("attrs %v: false is no signal, want no conversation_compacted", a)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, got := ingestAll(t, []export{chatExport("usage", 1, tc.attrs)})
			mcs := modelCalls(oneSession(t, got))
			if len(mcs) != 1 {
				t.Fatalf("%d model calls, want 1", len(mcs))
			}
			tc.check(t, mcs[0], attrsOf(t, mcs[0]))
		})
	}
}

// TestCompactedConversation: a call whose span says
// gen_ai.conversation.compacted, and whose input is a summary in place of
// the conversation so far (it shares no message with it), is recorded as a
// compaction of the conversation, said to be the emitter's, never as a new
// or side conversation.
func TestCompactedConversation(t *testing.T) {
	msgs := func(role, text string) string {
		b, _ := json.Marshal([]map[string]any{{"role": role, "parts": []map[string]any{{"type": "text", "content": text}}}})
		return string(b)
	}
	first := chatExport("compact", 1, map[string]any{
		"gen_ai.input.messages":  msgs("user", "Refactor the billing module and keep the API stable."),
		"gen_ai.output.messages": msgs("assistant", "Done: billing split into three files."),
	})
	second := chatExport("compact", 5, map[string]any{
		"gen_ai.input.messages":     msgs("user", "Summary of the conversation so far: billing was refactored; the API is unchanged."),
		"gen_ai.output.messages":    msgs("assistant", "Continuing from the summary."),
		genai.ConversationCompacted: true,
	})
	_, got := ingestAll(t, []export{first, second})
	evs := oneSession(t, got)
	var compactions []session.Event
	for _, e := range evs {
		if e.Kind == session.KindCompaction {
			compactions = append(compactions, e)
		}
	}
	if len(compactions) != 1 {
		t.Fatalf("%d compactions, want 1:\n%s", len(compactions), encodeAll(t, evs))
	}
	if a := attrsOf(t, compactions[0]); a["conversation_compacted"] != true {
		t.Errorf("compaction attrs %v: want conversation_compacted true (the emitter said so)", a)
	}
	mcs := modelCalls(evs)
	if len(mcs) != 2 {
		t.Fatalf("%d model calls, want 2", len(mcs))
	}
	if a := attrsOf(t, mcs[1]); a["conversation_compacted"] != true {
		t.Errorf("second model_call attrs %v: want conversation_compacted true", a)
	}
	if a := attrsOf(t, mcs[0]); a["conversation_compacted"] != nil {
		t.Errorf("first model_call attrs %v: it was not compacted", a)
	}
}

// TestInferenceDetailsEvent: the current content event,
// gen_ai.client.inference.operation.details, its messages, system
// instructions, finish reasons and usage structured (not JSON strings), on
// a span that carries none of them, makes the conversation and the usage.
func TestInferenceDetailsEvent(t *testing.T) {
	details := map[string]any{
		"gen_ai.system_instructions": []any{map[string]any{"type": "text", "content": "You are a support agent."}},
		"gen_ai.input.messages": []any{map[string]any{"role": "user", "parts": []any{
			map[string]any{"type": "text", "content": "Where is my order A-1043?"}}}},
		"gen_ai.output.messages": []any{map[string]any{"role": "assistant", "finish_reason": "tool_call", "parts": []any{
			map[string]any{"type": "tool_call", "id": "call_1", "name": "lookup_order", "arguments": map[string]any{"order_id": "A-1043"}}}}},
		"gen_ai.response.finish_reasons": []string{"tool_calls"},
		"gen_ai.usage.input_tokens":      120,
		genai.CacheWriteInputTokens:      80,
		"gen_ai.tool.definitions":        []any{map[string]any{"type": "function", "name": "lookup_order"}},
	}
	_, got := ingestAll(t, []export{detailsExport("details", 1, details), chatExport("details", 1, nil)})
	evs := oneSession(t, got)
	var user, answer *session.Event
	for i := range evs {
		switch evs[i].Kind {
		case session.KindUserMessage:
			user = &evs[i]
		case session.KindAssistantMessage:
			answer = &evs[i]
		}
	}
	if user == nil || user.Text != "Where is my order A-1043?" {
		t.Fatalf("user message %+v:\n%s", user, encodeAll(t, evs))
	}
	if answer == nil || len(answer.ToolCalls) != 1 || answer.ToolCalls[0].Name != "lookup_order" || string(answer.ToolCalls[0].Args) != `{"order_id":"A-1043"}` {
		t.Fatalf("answer %+v", answer)
	}
	mcs := modelCalls(evs)
	if len(mcs) != 1 || mcs[0].InputTokens != 120 || mcs[0].CacheCreationInputTokens != 80 || mcs[0].FinishReason != "tool_calls" {
		t.Fatalf("model calls %+v", mcs)
	}
}

// TestStructuredToolCall: an execute_tool span whose arguments and result
// are structured values (the conventions' type any, which they ask to be
// recorded structured where the SDK can), not JSON strings, gives the
// tool call its arguments as JSON and its result as the JSON text.
func TestStructuredToolCall(t *testing.T) {
	conv := oteltest.LoadConventions(t)
	for _, k := range []string{"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.tool.call.id", "gen_ai.tool.name"} {
		if !conv.Has(oteltest.V141, k) || !conv.Has(oteltest.GenAIRepo, k) {
			t.Fatalf("%s is not in both versions", k)
		}
	}
	tool := chatExport("tool", 2, map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_order",
		"gen_ai.tool.call.id": "call_1", "gen_ai.tool.call.arguments": map[string]any{"order_id": "A-1043"},
		"gen_ai.tool.call.result": map[string]any{"status": "shipped"}})
	_, got := ingestAll(t, []export{tool})
	evs := oneSession(t, got)
	var intent, result *session.Event
	for i := range evs {
		switch evs[i].Kind {
		case session.KindToolIntent:
			intent = &evs[i]
		case session.KindToolResult:
			result = &evs[i]
		}
	}
	if intent == nil || intent.Tool != "lookup_order" || string(intent.Args) != `{"order_id":"A-1043"}` {
		t.Fatalf("intent %+v:\n%s", intent, encodeAll(t, evs))
	}
	if result == nil || result.CallID != intent.CallID || result.Output != `{"status":"shipped"}` {
		t.Fatalf("result %+v", result)
	}
}
