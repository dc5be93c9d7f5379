package cli_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentctl/agentctl/internal/recorder/otlp"
	"github.com/agentctl/agentctl/internal/recorder/otlp/jaegertest"
)

// loopback serves recorded provider bodies in order: status 200 bodies as
// SSE, others as JSON errors with Retry-After-Ms: 1.
func loopback(t *testing.T, replies ...struct {
	status int
	body   []byte
}) *httptest.Server {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i >= len(replies) {
			http.Error(w, `{"error":{"message":"no more recorded turns","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		if replies[i].status == 200 {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After-Ms", "1")
		}
		w.WriteHeader(replies[i].status)
		w.Write(replies[i].body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type rep = struct {
	status int
	body   []byte
}

func corpusRead(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "corpus", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeSpec(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func only(t *testing.T, byName map[string][]jaegertest.Span, name string) jaegertest.Span {
	t.Helper()
	if len(byName[name]) != 1 {
		t.Fatalf("spans named %q = %d, want 1 (names %v)", name, len(byName[name]), keysOf(byName))
	}
	return byName[name][0]
}

// Real runs against recorded provider streams on loopback, exported live
// to a real Jaeger: the GenAI attributes the conventions recommend are on
// the chat spans, error.type is the provider's own, a budget stop and a
// refusal are errors, and the resource and scope say who exported.
func TestOTLPProviderFidelityToJaeger(t *testing.T) {
	j := jaegertest.Start(t)
	setenv(t, j.Env("http/protobuf"))

	t.Run("cached anthropic turn after a 529", func(t *testing.T) {
		cassette := corpusRead(t, "sse/anthropic-messages/pydantic__pydantic-ai/test_anthropic_compaction_usage_with_cache_streaming.yaml")
		body := string(cassette)
		// The SSE body of the cassette's only interaction, as the serve command reads it.
		srv := loopback(t, rep{529, []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)},
			rep{200, cassetteSSE(t, body)})
		u, _ := url.Parse(srv.URL)
		home := t.TempDir()
		const sid = "00000000000f1001"
		spec := writeSpec(t, "name: cached\nmodel: {provider: anthropic, id: claude-sonnet-4-6, base_url: \""+srv.URL+"\", max_tokens: 512}\nprompt: hello\nmode: read-only\n")
		if code, _, stderr := agentctl(t, home, "run", spec, "-q", "--session-id", sid); code != 0 || stderr != "" {
			t.Fatalf("run exit %d: %s", code, stderr)
		}
		spans := j.WaitTrace(t, otlp.TraceID(sid).String(), 3)
		byName, _ := tree(t, spans)
		root := only(t, byName, "invoke_agent cached")
		if got := tag(root, "gen_ai.agent.id"); !strings.HasPrefix(got, "sha256:") {
			t.Errorf("gen_ai.agent.id = %s, want the spec hash", got)
		}
		if tag(root, "gen_ai.usage.cache_read.input_tokens") != "55096" || tag(root, "gen_ai.usage.input_tokens") != "55377" {
			t.Errorf("invoke_agent usage = %v", root.Tags)
		}
		for k, want := range map[string]string{"telemetry.sdk.name": "opentelemetry", "telemetry.sdk.language": "go"} {
			if got := root.ProcessTags[k]; got != want {
				t.Errorf("resource %s = %v, want %s", k, got, want)
			}
		}
		if v, _ := root.ProcessTags["telemetry.sdk.version"].(string); v == "" {
			t.Errorf("resource has no telemetry.sdk.version: %v", root.ProcessTags)
		}
		if got := tag(root, "otel.scope.version"); got == "<missing>" || got == "" {
			t.Errorf("scope has no version (otel.scope.version = %s)", got)
		}
		chats := byName["chat claude-sonnet-4-6"]
		if len(chats) != 2 {
			t.Fatalf("chat spans = %d, want 2 (the failed try and the answer)", len(chats))
		}
		var failed, answer jaegertest.Span
		for _, c := range chats {
			if tag(c, "agentctl.model_call.attempt") == "1" {
				failed = c
			} else {
				answer = c
			}
		}
		if tag(failed, "error.type") != "overloaded_error" || tag(failed, "otel.status_code") != "ERROR" {
			t.Errorf("failed try: error.type %s, status %s", tag(failed, "error.type"), tag(failed, "otel.status_code"))
		}
		for k, want := range map[string]string{
			"server.address": u.Hostname(), "server.port": u.Port(), "gen_ai.response.id": "msg_011CduoCRono7pFKoTWpPAia",
			"gen_ai.request.max_tokens": "512", "gen_ai.usage.input_tokens": "55377", "gen_ai.usage.cache_read.input_tokens": "55096",
			"gen_ai.usage.output_tokens": "91", "agentctl.model_call.attempt": "2", "error.type": "<missing>",
		} {
			if got := tag(answer, k); got != want {
				t.Errorf("answer chat %s = %s, want %s", k, got, want)
			}
		}
		if got := tag(answer, "gen_ai.response.finish_reasons"); !strings.Contains(got, "stop") {
			t.Errorf("finish reasons = %s", got)
		}
	})

	t.Run("openai refusal", func(t *testing.T) {
		srv := loopback(t, rep{200, corpusRead(t, "sse/openai-chat-completions/openai__openai-python/ca015b8b1ebaac98be76f2f855f8694b77f608de5e2a3799276be06ce3fbb15b.bin")})
		home := t.TempDir()
		const sid = "00000000000f1002"
		spec := writeSpec(t, "name: refusal\nmodel: {provider: openai, id: gpt-4o, base_url: \""+srv.URL+"/v1\"}\nprompt: hello\nmode: read-only\n")
		if code, _, _ := agentctl(t, home, "run", spec, "-q", "--session-id", sid); code != 1 {
			t.Fatalf("run exit %d, want 1 (refused)", code)
		}
		byName, _ := tree(t, j.WaitTrace(t, otlp.TraceID(sid).String(), 2))
		root := only(t, byName, "invoke_agent refusal")
		if tag(root, "error.type") != "refused" || tag(root, "otel.status_code") != "ERROR" {
			t.Errorf("invoke_agent error.type %s status %s, want refused, ERROR", tag(root, "error.type"), tag(root, "otel.status_code"))
		}
		chat := only(t, byName, "chat gpt-4o")
		if tag(chat, "agentctl.response.refused") != "true" || tag(chat, "gen_ai.response.id") != "chatcmpl-9tXmMGFPkLS0t0u0895fzYOblnfYa" {
			t.Errorf("chat = %v", chat.Tags)
		}
	})

	t.Run("budget stop", func(t *testing.T) {
		home := t.TempDir()
		const sid = "00000000000f1003"
		if code, _, _ := agentctl(t, home, "run", fixture(t, "agents/loop-forever.yaml"), "-q", "--session-id", sid); code != 4 {
			t.Fatalf("run exit %d, want 4 (budget exceeded)", code)
		}
		_, out, _ := agentctl(t, home, "trace", sid, "--json")
		byName, _ := tree(t, j.WaitTrace(t, otlp.TraceID(sid).String(), strings.Count(out, `"startTimeUnixNano"`)))
		root := only(t, byName, "invoke_agent loop-forever")
		if tag(root, "error.type") != "budget_exceeded" || tag(root, "otel.status_code") != "ERROR" {
			t.Errorf("invoke_agent error.type %s status %s, want budget_exceeded, ERROR", tag(root, "error.type"), tag(root, "otel.status_code"))
		}
		for _, s := range byName["execute_tool bash"] {
			if et := tag(s, "error.type"); et == "error" {
				t.Errorf("execute_tool bash error.type is the bare status %q", et)
			}
		}
	})
}
