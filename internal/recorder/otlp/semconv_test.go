package otlp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentctl/agentctl/internal/genai"
	"github.com/agentctl/agentctl/internal/otelsession/oteltest"
	"github.com/agentctl/agentctl/internal/session"
)

// compacted is a run that compacts its conversation once (the
// summarizing call, then the compaction), retries the first call after
// it, calls once more, and then a collected call whose emitter said it
// was compacted (attrs conversation_compacted, no compaction event: its
// content was not captured).
func compacted() []session.Event {
	usage := func(in, out, read, write int64, attrs string) session.Event {
		e := session.Event{Kind: session.KindModelCall, Provider: "anthropic", Model: "claude-sonnet-4-6", LatencyMS: 400,
			InputTokens: in, OutputTokens: out, CacheReadInputTokens: read, CacheCreationInputTokens: write, FinishReason: "stop"}
		if attrs != "" {
			e.Attrs = json.RawMessage(attrs)
		}
		return e
	}
	failed := usage(0, 0, 0, 0, "")
	failed.Error, failed.ErrorType, failed.FinishReason = "anthropic: 529 overloaded_error: Overloaded", "overloaded_error", ""
	retried := usage(300, 20, 250, 0, "")
	retried.Attempt = 2
	evs := []session.Event{
		{Kind: session.KindSessionStarted, SessionID: "5e55100000000c0c", Name: "long", Provider: "anthropic", Model: "claude-sonnet-4-6"},
		{Kind: session.KindUserMessage, Text: "keep going"},
		{Kind: session.KindAssistantMessage, Text: "working"},
		usage(1000, 50, 400, 200, `{"reasoning_output_tokens":12}`), // 4: before the compaction
		usage(900, 80, 0, 0, `{"purpose":"compaction"}`),            // 5: the summarizing call
		{Kind: session.KindCompaction, Through: 4, Summary: "so far"},
		failed, // 7: first call after it, overloaded
		{Kind: session.KindAssistantMessage, Text: "continuing"},
		retried, // 9: its retry
		{Kind: session.KindAssistantMessage, Text: "still going"},
		usage(320, 30, 300, 0, ""),                                                   // 11: not the first any more
		usage(330, 10, 0, 0, `{"recorded_by":"otlp","conversation_compacted":true}`), // 12: collected, compacted
		{Kind: session.KindSessionFinished, Status: "done"},
	}
	for i := range evs {
		evs[i].Seq = int64(i + 1)
		evs[i].TS = t0.Add(time.Duration(i) * time.Second)
	}
	return evs
}

func chatsBySeq(t *testing.T, spans tracetest.SpanStubs) map[int64]tracetest.SpanStub {
	t.Helper()
	out := map[int64]tracetest.SpanStub{}
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "chat ") {
			out[attrs(s)[attrSeq].AsInt64()] = s
		}
	}
	return out
}

// TestSpansCompacted: the first model call after a compaction (each try
// of it) carries gen_ai.conversation.compacted = true, the attribute the
// conventions scope to inference spans; the summarizing call, the calls
// before and the later ones do not (the conventions set it only to true,
// so none carries false). A collected call whose emitter said so keeps it.
func TestSpansCompacted(t *testing.T) {
	chats := chatsBySeq(t, Spans("5e55100000000c0c", compacted(), Options{}))
	want := map[int64]bool{4: false, 5: false, 7: true, 9: true, 11: false, 12: true}
	for seq, w := range want {
		s, ok := chats[seq]
		if !ok {
			t.Fatalf("no chat span of seq %d", seq)
		}
		v, has := attrs(s)[attribute.Key(genai.ConversationCompacted)]
		if has && v.AsBool() != true {
			t.Errorf("seq %d: %s = %v: the conventions set it only to true", seq, genai.ConversationCompacted, v.Emit())
		}
		if has != w {
			t.Errorf("seq %d: %s set %v, want %v", seq, genai.ConversationCompacted, has, w)
		}
	}
}

// TestSpansCurrentNames: cache writes are exported under the current name
// (gen_ai.usage.cache_write.input_tokens) and the released one beside it,
// reasoning tokens a collected session kept are exported, and every
// gen_ai.* key of every span is one the conventions define: in v1.41.1 or
// semantic-conventions-genai (the corpus copies) or a name added upstream
// since (genai.AfterV141), never a deprecated one.
func TestSpansCurrentNames(t *testing.T) {
	conv := oteltest.LoadConventions(t)
	spans := Spans("5e55100000000c0c", compacted(), Options{CaptureContent: true})
	after := map[string]bool{}
	for _, s := range genai.AfterV141 {
		after[s.Name] = true
	}
	for _, s := range spans {
		kvs := append([]attribute.KeyValue(nil), s.Attributes...)
		for _, e := range s.Events {
			kvs = append(kvs, e.Attributes...)
		}
		for _, kv := range kvs {
			k := string(kv.Key)
			if !strings.HasPrefix(k, "gen_ai.") {
				continue
			}
			if conv.Deprecated[k] || len(conv.Attributes[k]) == 0 && !after[k] {
				t.Errorf("%s: %s is not a current GenAI attribute", s.Name, k)
			}
		}
	}
	chat := attrs(chatsBySeq(t, spans)[4])
	write, cur := chat[attribute.Key(genai.CacheWriteInputTokens)]
	old, rel := chat["gen_ai.usage.cache_creation.input_tokens"]
	if !cur || write.AsInt64() != 200 {
		t.Errorf("chat: %s = %v, want 200", genai.CacheWriteInputTokens, write.Emit())
	}
	if !rel || old.AsInt64() != 200 {
		t.Errorf("chat: gen_ai.usage.cache_creation.input_tokens = %v, want 200 beside the current name", old.Emit())
	}
	if r := chat["gen_ai.usage.reasoning.output_tokens"]; r.AsInt64() != 12 {
		t.Errorf("chat: gen_ai.usage.reasoning.output_tokens = %v, want 12", r.Emit())
	}
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "invoke_agent") {
			if w := attrs(s)[attribute.Key(genai.CacheWriteInputTokens)]; w.AsInt64() != 200 {
				t.Errorf("invoke_agent: %s = %v, want 200 (the run's sum)", genai.CacheWriteInputTokens, w.Emit())
			}
		}
	}
}
