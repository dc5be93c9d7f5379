package otelsession

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/agentctl/agentctl/internal/proxy"
	"github.com/agentctl/agentctl/internal/session"
)

// The requests are the real ones opencode 1.18.33 sent (see
// internal/proxy/side_test.go for how they were captured): its title
// call, with its own system prompt, no tools and a message of its own,
// and the agent's two turns.
const opencodeDir = "../proxy/testdata/opencode-1.18.33/"

type ocRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func answerOf(body string) string {
	if strings.Contains(body, "Generate a title for this conversation") {
		return "Greeting Test"
	}
	return "Hello there."
}

func strKV(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// chatSpanOf is a chat span in the current GenAI conventions (content on
// the span, as gen_ai.input.messages and friends) for one request of
// conversation key, answered with answerOf, in a trace of its own.
func chatSpanOf(t *testing.T, body, key string, i int) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	var r ocRequest
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	var sys []any
	var in []any
	for _, m := range r.Messages {
		if m.Role == "system" {
			sys = append(sys, map[string]any{"type": "text", "content": m.Content})
			continue
		}
		in = append(in, map[string]any{"role": m.Role, "parts": []any{map[string]any{"type": "text", "content": m.Content}}})
	}
	var tools []any
	for _, tl := range r.Tools {
		tools = append(tools, map[string]any{"type": "function", "name": tl.Function.Name})
	}
	out := []any{map[string]any{"role": "assistant", "parts": []any{map[string]any{"type": "text", "content": answerOf(body)}}, "finish_reason": "stop"}}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	attrs := []*commonpb.KeyValue{strKV("gen_ai.operation.name", "chat"), strKV("gen_ai.provider.name", "openai"),
		strKV("gen_ai.request.model", r.Model), strKV("gen_ai.conversation.id", key),
		strKV("gen_ai.input.messages", js(in)), strKV("gen_ai.output.messages", js(out))}
	if sys != nil {
		attrs = append(attrs, strKV("gen_ai.system_instructions", js(sys)))
	}
	if tools != nil {
		attrs = append(attrs, strKV("gen_ai.tool.definitions", js(tools)))
	}
	tid, _ := hex.DecodeString(fmt.Sprintf("%032x", 0x51de0+i))
	sid, _ := hex.DecodeString(fmt.Sprintf("%016x", 0x51de0+i))
	start := time.Date(2026, 12, 6, 7, 0, i, 0, time.UTC)
	sp := &tracepb.Span{TraceId: tid, SpanId: sid, Name: "chat " + r.Model, Kind: tracepb.Span_SPAN_KIND_CLIENT,
		StartTimeUnixNano: uint64(start.UnixNano()), EndTimeUnixNano: uint64(start.Add(500 * time.Millisecond).UnixNano()), Attributes: attrs}
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{sp}}}}}}
}

// conversationOf is a thread as the two groupings are compared: its
// messages in order, and any compaction.
func conversationOf(evs []session.Event) string {
	var b strings.Builder
	for _, e := range evs {
		switch e.Kind {
		case session.KindUserMessage, session.KindAssistantMessage:
			fmt.Fprintf(&b, "%s %q\n", e.Kind, clipTo(e.Text, 40))
		case session.KindCompaction:
			fmt.Fprintf(&b, "compaction %q\n", clipTo(e.Summary, 40))
		case session.KindModelCall:
			b.WriteString("model_call\n")
		}
	}
	return b.String()
}

func clipTo(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// threadsOf returns the conversation of session main and of each of its
// side threads, in order, from sessions by id.
func threadsOf(t *testing.T, sessions map[string][]session.Event, main string) []string {
	t.Helper()
	out := []string{conversationOf(sessions[main])}
	for n := 1; ; n++ {
		evs, ok := sessions[session.SideThreadID(main, n)]
		if !ok {
			break
		}
		if of, k := session.SideThreadOf(evs[0]); of != main || k != n {
			t.Errorf("side thread %d of %s: header says %d of %q", n, main, k, of)
		}
		out = append(out, conversationOf(evs))
	}
	if len(out)+0 != len(sessions) {
		t.Errorf("%d sessions, %d of them threads of %s", len(sessions), len(out), main)
	}
	return out
}

// TestSideThreadLikeProxy collects opencode's title call and the agent's
// turns as spans of one conversation (gen_ai.conversation.id), in the
// orders opencode can send them, and records the same requests through
// the proxy on one session: both make the same threads, the agent's
// conversation one history and the title call a side thread, and no
// compaction.
func TestSideThreadLikeProxy(t *testing.T) {
	bodies := map[string]string{}
	for _, n := range []string{"title", "turn1", "turn2"} {
		b, err := os.ReadFile(opencodeDir + n + ".json")
		if err != nil {
			t.Fatal(err)
		}
		bodies[n] = string(b)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "c1", "object": "chat.completion", "created": 1, "model": "test-model",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": answerOf(string(b))}, "finish_reason": "stop"}}})
	}))
	defer up.Close()
	for _, order := range [][]string{{"title", "turn1", "turn2"}, {"turn1", "title", "turn2"}} {
		t.Run(strings.Join(order, ","), func(t *testing.T) {
			// Collected.
			var exps []export
			for i, n := range order {
				exps = append(exps, export{name: n, traces: chatSpanOf(t, bodies[n], "oc", i)})
			}
			_, got := ingestAll(t, exps)
			collected := threadsOf(t, got, sessionID("session oc"))

			// Proxied.
			u, err := proxy.NewUpstream(up.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			mem := &proxy.MemSessions{}
			srv, err := proxy.New(proxy.Config{Backend: u, Open: mem.Open})
			if err != nil {
				t.Fatal(err)
			}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			for _, n := range order {
				var r map[string]any
				json.Unmarshal([]byte(bodies[n]), &r)
				r["stream"] = false
				delete(r, "stream_options")
				b, _ := json.Marshal(r)
				resp, err := http.Post(hs.URL+"/s/oc/v1/chat/completions", "application/json", strings.NewReader(string(b)))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("%s: status %d", n, resp.StatusCode)
				}
			}
			srv.Close()
			proxied := map[string][]session.Event{}
			for _, id := range mem.IDs() {
				proxied[id] = mem.Get(id).Events()
			}
			want := threadsOf(t, proxied, "oc")
			if len(want) != 2 {
				t.Fatalf("the proxy made %d threads, want 2", len(want))
			}
			if strings.Join(collected, "--\n") != strings.Join(want, "--\n") {
				t.Errorf("collected threads:\n%s\nthe proxy's:\n%s", strings.Join(collected, "--\n"), strings.Join(want, "--\n"))
			}
			for _, c := range collected {
				if strings.Contains(c, "compaction") {
					t.Errorf("a collected thread holds a compaction:\n%s", c)
				}
			}
		})
	}
}

// TestSideThreadRestartDedups delivers the conversation again to a new
// Ingester (a retried export after a restart): the side thread's spans,
// which are in its own log, add nothing either.
func TestSideThreadRestartDedups(t *testing.T) {
	var exps []export
	for i, n := range []string{"title", "turn1", "turn2"} {
		b, err := os.ReadFile(opencodeDir + n + ".json")
		if err != nil {
			t.Fatal(err)
		}
		exps = append(exps, export{name: n, traces: chatSpanOf(t, string(b), "oc", i)})
	}
	st, first := ingestAll(t, exps)
	if len(first) != 2 {
		t.Fatalf("%d sessions, want the conversation and its side thread", len(first))
	}
	in, err := NewIngester(st, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	feed(t, in, exps)
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if got := in.Sessions(); len(got) != 0 {
		t.Errorf("the second delivery wrote sessions %v, want none", got)
	}
	again := loadAll(t, st)
	for id, evs := range first {
		if a, b := encodeAll(t, evs), encodeAll(t, again[id]); a != b {
			t.Errorf("session %s changed:\n got: %s\nwant: %s", id, b, a)
		}
	}
	if len(again) != len(first) {
		t.Errorf("%d sessions after the second delivery, want %d", len(again), len(first))
	}
}
