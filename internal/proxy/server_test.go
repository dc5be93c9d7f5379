package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// TestPolicyRefuses: the policy sees the parsed call and what the
// conversation spent; its refusal reaches the SDK in the provider's shape
// and is recorded, and nothing is served.
func TestPolicyRefuses(t *testing.T) {
	var seen []Call
	policy := func(_ context.Context, c *Call) *Refusal {
		seen = append(seen, *c)
		if c.Spent.Calls >= 1 {
			return &Refusal{Type: "budget_exceeded", Message: "max_model_calls 1 reached"}
		}
		return nil
	}
	var recorded []string
	onRec := func(c *Call, evs []session.Event) {
		recorded = append(recorded, fmt.Sprintf("%d:%s", c.Turn, kinds(evs)))
	}
	srv, mem, base := startProxy(t, Config{Backend: NewScripted(loadScript(t, testScript), ""), Policy: policy, OnRecorded: onRec})
	cl := anthropicClient(base)
	params := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 77,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Read the readme."))}}
	m, err := cl.Messages.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	params.Messages = append(params.Messages, m.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(m.Content[1].ID, "hello", false)))
	_, err = cl.Messages.New(context.Background(), params)
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(err.Error(), "max_model_calls 1 reached") || !strings.Contains(err.Error(), "budget_exceeded") {
		t.Fatalf("second call err = %v, want the policy's refusal", err)
	}
	if len(seen) != 2 || seen[0].Model != "claude-sonnet-4-5" || seen[0].MaxTokens != 77 || len(seen[1].Messages) != 3 || seen[1].Spent.InputTokens != 120 {
		t.Fatalf("policy saw %+v", seen)
	}
	mc := lastOf(only(t, srv, mem), session.KindModelCall)
	if mc.ErrorType != "budget_exceeded" || !strings.Contains(string(mc.Attrs), `"refused":true`) {
		t.Fatalf("refused model_call = %+v", mc)
	}
	if want := []string{"1:user_message assistant_message model_call", "2:tool_result model_call"}; !reflect.DeepEqual(recorded, want) {
		t.Errorf("OnRecorded saw %q, want %q", recorded, want)
	}
}

// TestToken: with a token, a request without it is a 401; the header and
// the /t/<token> base URL both pass.
func TestToken(t *testing.T) {
	_, _, base := startProxy(t, Config{Backend: NewScripted(loadScript(t, testScript), ""), Token: "tok123"})
	params := openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	cl := openaiClient(base)
	_, err := cl.Chat.Completions.New(context.Background(), params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Fatalf("no token: err = %v, want 401", err)
	}
	for _, c := range []openai.Client{
		openai.NewClient(option.WithBaseURL(base+"/t/tok123/v1"), option.WithAPIKey("k"), option.WithMaxRetries(0)),
		openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey("k"), option.WithMaxRetries(0), option.WithHeader("X-Agentctl-Token", "tok123")),
	} {
		if _, err := c.Chat.Completions.New(context.Background(), params); err != nil {
			t.Errorf("with the token: %v", err)
		}
	}
	wrong := openai.NewClient(option.WithBaseURL(base+"/t/tok124/v1"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	if _, err := wrong.Chat.Completions.New(context.Background(), params); !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Errorf("wrong token: err = %v, want 401", err)
	}
}

// TestGrouping: without /s/ URLs, interleaved agents are told apart by
// history prefix; an agent that compacts its history (keeps the first
// prompt, replaces the rest) stays in its session with a compaction; a
// /s/<id>/ URL names the session exactly.
func TestGrouping(t *testing.T) {
	script := loadScript(t, `
turns:
  - text: "one"
  - text: "two"
  - text: "three"
`)
	srv, mem, base := startProxy(t, Config{Backend: NewScripted(script, "")})
	u := func(s string) any { return map[string]any{"role": "user", "content": s} }
	a := func(s string) any { return map[string]any{"role": "assistant", "content": s} }
	req := func(msgs ...any) string {
		return string(marshal(map[string]any{"model": "gpt-4o", "messages": msgs}))
	}
	post(t, base+"/v1/chat/completions", req(u("agent A")))
	post(t, base+"/v1/chat/completions", req(u("agent B")))
	post(t, base+"/v1/chat/completions", req(u("agent B"), a("one"), u("more B")))
	post(t, base+"/v1/chat/completions", req(u("agent A"), a("one"), u("more A")))
	// A compacts: the first prompt, then its own summary.
	post(t, base+"/v1/chat/completions", req(u("agent A"), u("Summary: A asked twice.")))
	post(t, base+"/s/named-1/v1/chat/completions", req(u("agent A")))
	waitIdle(t, srv)
	ids := mem.IDs()
	if len(ids) != 3 || ids[2] != "named-1" {
		t.Fatalf("sessions = %v, want A, B and named-1", ids)
	}
	evA, evB := mem.Get(ids[0]).Events(), mem.Get(ids[1]).Events()
	if evA[1].Text != "agent A" || evB[1].Text != "agent B" {
		t.Fatalf("first prompts: %q, %q", evA[1].Text, evB[1].Text)
	}
	wantA := "session_started user_message assistant_message model_call user_message assistant_message model_call compaction assistant_message model_call"
	if got := kinds(evA); got != wantA {
		t.Fatalf("A kinds = %s\nwant %s", got, wantA)
	}
	comp := lastOf(evA, session.KindCompaction)
	if comp.Summary != "Summary: A asked twice." || comp.Through != 7 {
		t.Errorf("compaction = %+v, want the new summary through seq 7", comp)
	}
	if got := kinds(evB); got != "session_started user_message assistant_message model_call user_message assistant_message model_call" {
		t.Errorf("B kinds = %s", got)
	}
	// Each conversation has its own script position.
	if am := lastOf(evB, session.KindAssistantMessage); am.Text != "two" {
		t.Errorf("B's second answer = %q, want turn 2 of the script", am.Text)
	}
}

// TestRunnerSink records into a session the caller opened (the runner's
// way): the log is a real one, artifacts are on disk, and Close leaves the
// session to its owner.
func TestRunnerSink(t *testing.T) {
	t.Setenv("MY_SERVICE_TOKEN", "s3cr3t-value-0123456789")
	st := recorder.Store{Root: t.TempDir()}
	sess, err := st.Create(session.Event{Name: "ext", Provider: "scripted", Model: "m"}, recorder.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	srv, _, base := startProxy(t, Config{Backend: NewScripted(loadScript(t, testScript), ""), Sink: NewSessionSink(sess)})
	post(t, base+"/s/"+sess.ID+"/v1/chat/completions", string(marshal(map[string]any{"model": "gpt-4o",
		"messages": []any{map[string]any{"role": "user", "content": "use s3cr3t-value-0123456789 please"}}})))
	waitIdle(t, srv)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	evs, _, err := st.Load(sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(evs); got != "session_started user_message assistant_message model_call" {
		t.Fatalf("kinds = %s (Close must not finish the runner's session)", got)
	}
	if strings.Contains(evs[1].Text, "s3cr3t") {
		t.Errorf("user_message not redacted: %q", evs[1].Text)
	}
	var a map[string]string
	json.Unmarshal(evs[3].Attrs, &a)
	for _, k := range []string{"request_artifact", "response_artifact"} {
		b, err := ReadArtifact(sess.Dir, a[k])
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if strings.Contains(string(b), "s3cr3t-value") {
			t.Errorf("%s holds the secret: %s", k, b)
		}
	}
}

// TestReadArtifactHostile: a log from elsewhere names the artifacts; only
// plain files directly in the artifacts folder are read.
func TestReadArtifactHostile(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, recorder.ArtifactsDir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, recorder.ArtifactsDir, "ok.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(dir, "secret"), []byte("x"), 0o644)
	os.Symlink(filepath.Join(dir, "secret"), filepath.Join(dir, recorder.ArtifactsDir, "link.json"))
	os.Symlink("/etc/passwd", filepath.Join(dir, recorder.ArtifactsDir, "abs.json"))
	for _, tc := range []struct {
		rel string
		ok  bool
	}{
		{"artifacts/ok.json", true},
		{"artifacts/ok.json#0+2", true},
		{"artifacts/ok.json#1+2", false},
		{"artifacts/ok.json#-1+1", false},
		{"artifacts/ok.json#0+99999999999", false},
		{"artifacts/ok.json#x", false},
		{"artifacts/../secret", false},
		{"/etc/passwd", false},
		{"artifacts/link.json", false},
		{"artifacts/abs.json", false},
		{"artifacts/sub", false},
		{"artifacts/sub/../ok.json", false},
		{"secret", false},
		{"artifacts/", false},
	} {
		_, err := ReadArtifact(dir, tc.rel)
		if (err == nil) != tc.ok {
			t.Errorf("ReadArtifact(%q) = %v, want ok %t", tc.rel, err, tc.ok)
		}
	}
}

// TestModelsAndCount: /v1/models and count_tokens answer locally in script
// mode and are not recorded as model calls; an unknown path is a 404 in
// the provider's shape.
func TestModelsAndCount(t *testing.T) {
	srv, mem, base := startProxy(t, Config{Backend: NewScripted(loadScript(t, testScript), "scripted-1")})
	cl := openaiClient(base)
	page, err := cl.Models.List(context.Background())
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != "scripted-1" {
		t.Fatalf("models = %+v, %v", page, err)
	}
	acl := anthropicClient(base)
	n, err := acl.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{Model: "claude",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("twelve chars"))}})
	if err != nil || n.InputTokens != 4 {
		t.Fatalf("count_tokens = %+v, %v; want 12/4+1", n, err)
	}
	resp, err := http.Get(base + "/v1/embeddings")
	if err != nil || resp.StatusCode != 404 {
		t.Fatalf("unknown path: %v %v", resp, err)
	}
	waitIdle(t, srv)
	if ids := mem.IDs(); len(ids) != 0 {
		t.Errorf("sessions = %v: listing models or counting tokens records nothing", ids)
	}
}

// TestReplayTornArtifact: a crash between the artifact sync and the log's
// can leave events naming bytes that are not on disk; the replay then
// renders the recorded answer from the events instead of failing.
func TestReplayTornArtifact(t *testing.T) {
	st := recorder.Store{Root: t.TempDir()}
	srv, err := New(Config{Backend: NewScripted(loadScript(t, testScript), ""), Open: StoreSessions{Store: st}.Open})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptestServer(t, srv)
	post(t, hs+"/s/torn/v1/chat/completions", chatBody(false))
	waitIdle(t, srv)
	srv.Close()
	if err := os.Truncate(filepath.Join(st.SessionDir("torn"), recorder.ArtifactsDir, bodiesArtifact), 10); err != nil {
		t.Fatal(err)
	}
	evs, _, err := st.Load("torn")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReplay(ReplayConfig{Events: evs, Artifacts: func(rel string) ([]byte, error) { return ReadArtifact(st.SessionDir("torn"), rel) }})
	if err != nil {
		t.Fatalf("NewReplay over a torn artifact: %v", err)
	}
	_, _, base := startProxy(t, Config{Backend: r})
	status, body := post(t, base+"/v1/chat/completions", chatBody(false))
	if status != 200 || !strings.Contains(string(body), `"Let me look."`) || !strings.Contains(string(body), "call_1_0") {
		t.Fatalf("replay of a torn artifact: %d %s", status, body)
	}
}

func httptestServer(t *testing.T, h http.Handler) string {
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestConcurrentConversations: agents calling at once, some by /s/ URL
// and some grouped by prefix, with a scripted delay mid-stream, while the
// session list is read: each lands in its own session, whole (run with
// -race).
func TestConcurrentConversations(t *testing.T) {
	script := loadScript(t, `
turns:
  - text: "first answer"
    delay: 20ms
  - text: "second answer"
`)
	srv, mem, base := startProxy(t, Config{Backend: NewScripted(script, "")})
	const agents = 8
	done := make(chan error, agents)
	for i := 0; i < agents; i++ {
		go func(i int) {
			prefix := base
			if i%2 == 0 {
				prefix = fmt.Sprintf("%s/s/agent-%d", base, i)
			}
			u := map[string]any{"role": "user", "content": fmt.Sprintf("agent %d", i)}
			st, _ := postErr(prefix+"/v1/chat/completions", string(marshal(map[string]any{"model": "m", "stream": true, "messages": []any{u}})))
			st2, _ := postErr(prefix+"/v1/chat/completions", string(marshal(map[string]any{"model": "m", "messages": []any{u,
				map[string]any{"role": "assistant", "content": "first answer"}, map[string]any{"role": "user", "content": "again"}}})))
			if st != 200 || st2 != 200 {
				done <- fmt.Errorf("agent %d: status %d, %d", i, st, st2)
				return
			}
			done <- nil
		}(i)
	}
	for i := 0; i < agents; i++ {
		srv.Sessions()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	waitIdle(t, srv)
	ids := mem.IDs()
	if len(ids) != agents {
		t.Fatalf("%d sessions, want %d: %v", len(ids), agents, ids)
	}
	for _, id := range ids {
		if got := kinds(mem.Get(id).Events()); got != "session_started user_message assistant_message model_call user_message assistant_message model_call" {
			t.Errorf("session %s kinds = %s", id, got)
		}
	}
}

func postErr(url, body string) (int, error) {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}
