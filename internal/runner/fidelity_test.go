package runner

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentctl/agentctl/internal/pricing"
	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/tools"
)

const (
	refusalStream = "sse/openai-chat-completions/openai__openai-python/ca015b8b1ebaac98be76f2f855f8694b77f608de5e2a3799276be06ce3fbb15b.bin"
	lengthStream  = "sse/openai-chat-completions/openai__openai-python/69363a555f8ea9b6eee0bb022af0afcd22d4f0e85418ab38ee24d2a570a84ff0.bin"
	plainStream   = "sse/openai-chat-completions/openai__openai-python/e2aad469b71d1d4894ff833ea147020a9d875eb7ce644a0ff355581690a4cbfd.bin"
	basicStream   = "sse/anthropic-messages/anthropics__anthropic-sdk-python/basic_response.txt"
	cacheCassette = "sse/anthropic-messages/pydantic__pydantic-ai/test_anthropic_compaction_usage_with_cache_streaming.yaml"
	// Built from the cache cassette (see testdata/derived/README.md).
	errorAfterText = "anthropic-compaction-cache.derived-cut-after-first-text-then-overloaded_error.sse"
)

func corpusBytes(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "corpus", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func derivedBytes(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "derived", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// served is one HTTP answer of a loopback provider.
type served struct {
	status int
	header map[string]string
	body   []byte
}

func sse(b []byte) served { return served{status: 200, body: b} }

// serve answers requests with the replies in order, as the provider did.
func serve(t *testing.T, replies ...served) *httptest.Server {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i >= len(replies) {
			http.Error(w, `{"error":{"message":"no more recorded turns","type":"invalid_request_error"}}`, 400)
			return
		}
		rep := replies[i]
		ct := "text/event-stream"
		if rep.status != 200 {
			ct = "application/json"
		}
		w.Header().Set("Content-Type", ct)
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(rep.status)
		w.Write(rep.body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type fidelityRun struct {
	res Result
	err error
	evs []session.Event
}

func (f fidelityRun) kind(k session.Kind) []session.Event {
	var out []session.Event
	for _, e := range f.evs {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// runAgainst runs a real session against a loopback provider.
func runAgainst(t *testing.T, prov string, srv *httptest.Server, retries int, edit func(*spec.Spec)) fidelityRun {
	t.Helper()
	var p provider.Provider
	var err error
	model := "gpt-4o"
	if prov == "openai" {
		p, err = provider.NewOpenAI(provider.OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "k", MaxRetries: retries})
	} else {
		model = "claude-sonnet-4-6"
		p, err = provider.NewAnthropic(provider.AnthropicConfig{BaseURL: srv.URL, APIKey: "k", MaxRetries: retries})
	}
	if err != nil {
		t.Fatal(err)
	}
	sp := &spec.Spec{Name: "fidelity", Model: spec.Model{Provider: prov, ID: model, MaxTokens: 512},
		Prompt: "answer", Mode: "write", MaxTurns: 5, Compaction: spec.Compaction{Window: 1 << 20, Threshold: 0.75},
		Sandbox: spec.Sandbox{Unconfined: true}}
	if edit != nil {
		edit(sp)
	}
	store := recorder.Store{Root: filepath.Join(t.TempDir(), "home")}
	res, err := Start(context.Background(), Config{Spec: sp, Store: store, Provider: p, Tools: tools.NewRegistry()})
	evs, _, lerr := store.Load(res.SessionID)
	if lerr != nil {
		t.Fatal(lerr)
	}
	return fidelityRun{res: res, err: err, evs: evs}
}

// The recorded OpenAI refusal is recorded as a refusal with its text, and
// the run fails instead of ending done with an empty answer.
func TestRefusalIsNotDone(t *testing.T) {
	f := runAgainst(t, "openai", serve(t, sse(corpusBytes(t, refusalStream))), -1, nil)
	if f.res.Status != session.StatusFailed || !strings.HasPrefix(f.res.Reason, ReasonRefused+": the model refused: I'm sorry") {
		t.Fatalf("Result = %s %q, want failed, refused", f.res.Status, f.res.Reason)
	}
	am := f.kind(session.KindAssistantMessage)
	if len(am) != 1 || am[0].Refusal != "I'm sorry, but I can't assist with that request." || am[0].Text != "" {
		t.Fatalf("assistant_message = %+v", am)
	}
	mc := f.kind(session.KindModelCall)
	if len(mc) != 1 || mc[0].ResponseID != "chatcmpl-9tXmMGFPkLS0t0u0895fzYOblnfYa" || mc[0].MaxTokens != 512 {
		t.Errorf("model_call = %+v", mc)
	}
	if n := len(f.kind(session.KindEvaluation)); n != 0 {
		t.Errorf("%d evaluations: a refusal is not a claim of being done", n)
	}
	// The fold does not take the refusal for a claim of being done.
	st, _ := foldLog("", f.evs)
	if st.DoneClaim || st.TruncClaim {
		t.Errorf("folded state claims done after a refusal")
	}
}

// A turn cut at max_tokens (the recorded finish_reason length stream) does
// what on_truncated says, and is never a silent success.
func TestTruncatedTurn(t *testing.T) {
	length := func(t *testing.T) served { return sse(corpusBytes(t, lengthStream)) }
	plain := func(t *testing.T) served { return sse(corpusBytes(t, plainStream)) }
	tests := []struct {
		name       string
		policy     string
		done       string
		replies    func(t *testing.T) []served
		wantStatus session.Status
		wantReason string
		wantUser   int // user messages: the prompt, plus one per continue
	}{
		{name: "default fails", replies: func(t *testing.T) []served { return []served{length(t)} },
			wantStatus: session.StatusFailed, wantReason: ReasonTruncated + ": the answer was cut at the output cap of 512 tokens", wantUser: 1},
		{name: "continue asks for the rest", policy: spec.TruncatedContinue, replies: func(t *testing.T) []served { return []served{length(t), plain(t)} },
			wantStatus: session.StatusDone, wantUser: 2},
		{name: "evaluate lets the checks decide: pass", policy: spec.TruncatedEvaluate, done: "true",
			replies: func(t *testing.T) []served { return []served{length(t)} }, wantStatus: session.StatusDone, wantUser: 1},
		{name: "evaluate lets the checks decide: fail", policy: spec.TruncatedEvaluate, done: "false",
			replies: func(t *testing.T) []served { return []served{length(t)} }, wantStatus: session.StatusFailed, wantReason: ReasonEvaluationFailed, wantUser: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := runAgainst(t, "openai", serve(t, tt.replies(t)...), -1, func(sp *spec.Spec) {
				sp.OnTruncated = tt.policy
				if tt.done != "" {
					sp.Done = []spec.DoneCheck{{Command: tt.done}}
				}
			})
			if f.res.Status != tt.wantStatus || !strings.HasPrefix(f.res.Reason, tt.wantReason) {
				t.Fatalf("Result = %s %q (%v), want %s %q", f.res.Status, f.res.Reason, f.err, tt.wantStatus, tt.wantReason)
			}
			am := f.kind(session.KindAssistantMessage)
			if am[0].FinishReason != provider.FinishLength || am[0].Text != `{"` {
				t.Errorf("first assistant_message = %+v, want finish_reason length and the cut text", am[0])
			}
			users := f.kind(session.KindUserMessage)
			if len(users) != tt.wantUser {
				t.Errorf("%d user messages, want %d", len(users), tt.wantUser)
			}
			if tt.policy == spec.TruncatedContinue && users[1].Text != TruncatedPrompt {
				t.Errorf("continue prompt = %q", users[1].Text)
			}
			if tt.policy == "" {
				st, _ := foldLog("", f.evs)
				if st.DoneClaim {
					t.Error("folded state takes the truncated answer for a claim of being done; resume would end it done")
				}
			}
		})
	}
}

// The recorded cached Anthropic turn bills its cache reads as input, keeps
// the breakdown, and prices each part: the run's totals and budgets see it.
func TestCacheTokensCounted(t *testing.T) {
	body := cassetteBodies(t, cacheCassette)[0]
	f := runAgainst(t, "anthropic", serve(t, sse(body)), -1, nil)
	if f.res.Status != session.StatusDone {
		t.Fatalf("Result = %+v, %v", f.res, f.err)
	}
	mc := f.kind(session.KindModelCall)[0]
	if mc.InputTokens != 55377 || mc.CacheReadInputTokens != 55096 || mc.CacheCreationInputTokens != 0 || mc.OutputTokens != 91 {
		t.Errorf("model_call usage = in %d (read %d, write %d) out %d, want 55377 (55096, 0) 91",
			mc.InputTokens, mc.CacheReadInputTokens, mc.CacheCreationInputTokens, mc.OutputTokens)
	}
	want := pricing.CostOf("claude-sonnet-4-6", pricing.Usage{Input: 55377, CacheRead: 55096, Output: 91})
	if math.Abs(mc.CostUSD-want) > 1e-12 || f.res.InputTokens != 55377 || math.Abs(f.res.CostUSD-want) > 1e-12 {
		t.Errorf("cost %v, result in %d cost %v; want %v and 55377", mc.CostUSD, f.res.InputTokens, f.res.CostUSD, want)
	}
	// A token budget counts the cache reads: a second turn would not fit.
	f = runAgainst(t, "anthropic", serve(t, sse(body), sse(body)), -1, func(sp *spec.Spec) {
		sp.Budget.MaxTokens = 60000
		sp.Done = []spec.DoneCheck{{Command: "false"}}
		sp.Retries = 3
	})
	if f.res.Status != session.StatusBudgetExceeded {
		t.Errorf("with max_tokens 60000: Result = %s %q, want budget_exceeded after the first cached turn", f.res.Status, f.res.Reason)
	}
}

// A stream that dies with overloaded_error after text keeps that text on
// the failed model_call, with the provider's error type and no HTTP
// status made up.
func TestErrorAfterTextKept(t *testing.T) {
	f := runAgainst(t, "anthropic", serve(t, sse(derivedBytes(t, errorAfterText))), 2, nil)
	if f.res.Status != session.StatusFailed || !strings.HasPrefix(f.res.Reason, ReasonProviderError) {
		t.Fatalf("Result = %s %q", f.res.Status, f.res.Reason)
	}
	mc := f.kind(session.KindModelCall)
	if len(mc) != 1 {
		t.Fatalf("%d model_calls, want 1 (no retry after text)", len(mc))
	}
	c := mc[0]
	if c.Text != "Hello!" || c.ErrorType != "overloaded_error" || c.Attempt != 0 || c.InputTokens != 100+55096 || c.CacheReadInputTokens != 55096 {
		t.Errorf("model_call = %+v", c)
	}
	if strings.Contains(c.Error, "529") || strings.Contains(f.res.Reason, "529") {
		t.Errorf("error %q / reason %q invent a 529 for an error event in a 200 stream", c.Error, f.res.Reason)
	}
	errs := f.kind(session.KindError)
	if len(errs) != 1 || errs[0].ErrorType != "overloaded_error" {
		t.Errorf("error events = %+v", errs)
	}
}

// Each failed try of a retried call is a model_call of its own, in order,
// before the answer; the answer's model_call is the last attempt.
func TestRetriesRecorded(t *testing.T) {
	overloaded := served{status: 529, header: map[string]string{"Retry-After-Ms": "1"},
		body: []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)}
	f := runAgainst(t, "anthropic", serve(t, overloaded, overloaded, sse(corpusBytes(t, basicStream))), 2, nil)
	if f.res.Status != session.StatusDone {
		t.Fatalf("Result = %+v, %v", f.res, f.err)
	}
	var got []string
	for _, e := range f.evs {
		switch e.Kind {
		case session.KindModelCall:
			got = append(got, string(e.Kind)+"#"+itoa(e.Attempt)+":"+e.ErrorType)
		case session.KindAssistantMessage:
			got = append(got, string(e.Kind))
		}
	}
	want := "model_call#1:overloaded_error model_call#2:overloaded_error assistant_message model_call#3:"
	if strings.Join(got, " ") != want {
		t.Errorf("calls = %s\nwant    %s", strings.Join(got, " "), want)
	}
	mc := f.kind(session.KindModelCall)
	if !strings.Contains(mc[0].Error, "529 overloaded_error") || mc[0].RequestDigest != mc[2].RequestDigest {
		t.Errorf("first try = %+v; want the real HTTP 529 and the same request digest as the answer", mc[0])
	}
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
