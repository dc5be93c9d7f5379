package agenthost

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/proxy"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/testenv"
)

// chatCall is a shell line that makes one Chat Completions call with curl
// to the proxy, as an SDK would, for model $1, printing the answer.
const chatCall = `call() { curl -s "$OPENAI_BASE_URL/chat/completions" -H 'content-type: application/json' -H "authorization: Bearer $OPENAI_API_KEY" -d "{\"model\":\"$1\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"; echo; }; `

// externalSpec writes an external-agent spec running sh -c script against
// a scripted model of the given turns, and loads it.
func externalSpec(t *testing.T, script, turns, extra string) *spec.Spec {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "model.yaml"), []byte("turns:\n"+turns), 0o644)
	y := fmt.Sprintf("name: ext\nmodel: {provider: scripted, id: m1, script: model.yaml}\nprompt: go\nagent:\n  command: [sh, -c, %q]\n%s", script, extra)
	os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte(y), 0o644)
	sp, err := spec.Load(filepath.Join(dir, "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// runExternal runs sp with its scripted model served by the proxy and
// returns the result, the recorded events and the agent's output.
func runExternal(t *testing.T, sp *spec.Spec) (runner.Result, []session.Event, string) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		t.Skip("no curl")
	}
	testenv.NeedSandbox(t)
	script, err := provider.LoadScript(sp.Model.Script)
	if err != nil {
		t.Fatal(err)
	}
	st := recorder.Store{Root: t.TempDir()}
	res, err := runner.Start(context.Background(), runner.Config{Spec: sp, Store: st, Agent: &Agent{Backend: proxy.NewScripted(script, sp.Model.ID)}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	evs, _, err := st.Load(res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(filepath.Join(st.SessionDir(res.SessionID), recorder.ArtifactsDir, AgentOutput))
	return res, evs, string(out)
}

func kinds(evs []session.Event) string {
	var k []string
	for _, e := range evs {
		k = append(k, string(e.Kind))
	}
	return strings.Join(k, " ")
}

// TestExternalAgentRecorded: a program that calls the model over the wire
// (curl here, an SDK in the npm tests) gets the scripted answer through
// the proxy, and its call is recorded in the run's session, folded into
// the result; its output is kept as an artifact.
func TestExternalAgentRecorded(t *testing.T) {
	sp := externalSpec(t, chatCall+`call m1`, "  - text: \"Hello there.\"\n    usage: {input_tokens: 7, output_tokens: 3}\n", "")
	res, evs, out := runExternal(t, sp)
	if res.Status != session.StatusDone || res.Turns != 1 || res.InputTokens != 7 || res.OutputTokens != 3 {
		t.Fatalf("result = %+v, want done after 1 turn of 7+3 tokens (events %s; output %q)", res, kinds(evs), out)
	}
	if got, want := kinds(evs), "session_started user_message assistant_message model_call session_finished"; got != want {
		t.Errorf("events = %s, want %s", got, want)
	}
	if !strings.Contains(out, "Hello there.") {
		t.Errorf("agent output %q lacks the scripted answer", out)
	}
}

// TestExternalAgentOnlyReachesProxy: inside the sandbox the program
// reaches the proxy at its base URL, and not a server listening on the
// host's loopback.
func TestExternalAgentOnlyReachesProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "HOST-SERVER") }))
	script := fmt.Sprintf(`curl -s --max-time 3 http://%s/ || echo host-unreachable; curl -sf "$OPENAI_BASE_URL/models" >/dev/null && echo proxy-ok`, ln.Addr())
	_, _, out := runExternal(t, externalSpec(t, script, "  - text: x\n", ""))
	if strings.Contains(out, "HOST-SERVER") || !strings.Contains(out, "host-unreachable") {
		t.Errorf("the host's loopback server was reachable from the agent: %q", out)
	}
	if !strings.Contains(out, "proxy-ok") {
		t.Errorf("the proxy was not reachable from the agent: %q", out)
	}
}

// TestExternalAgentPinnedModel: a request for another model than the
// pinned one is refused in the provider's shape (nothing served), or
// served and recorded as model_changed when the spec says record.
func TestExternalAgentPinnedModel(t *testing.T) {
	for _, tc := range []struct {
		policy, want string
		served       bool
	}{
		{"", "pinned to model", false},
		{"refuse", "pinned to model", false},
		{"record", "Hi.", true},
	} {
		t.Run("model_change="+tc.policy, func(t *testing.T) {
			extra := ""
			sp := externalSpec(t, chatCall+`call other-model`, "  - text: \"Hi.\"\n", extra)
			sp.Agent.ModelChange = tc.policy
			_, evs, out := runExternal(t, sp)
			if !strings.Contains(out, tc.want) {
				t.Errorf("agent saw %q, want %q", out, tc.want)
			}
			got := kinds(evs)
			if tc.served != strings.Contains(got, "assistant_message") || tc.served != strings.Contains(got, "model_changed") {
				t.Errorf("events = %s; served = %v", got, tc.served)
			}
		})
	}
}

// TestExternalAgentBudget: once the tokens are spent the next call gets
// a budget_exceeded error before the model is asked, and the run ends
// budget_exceeded.
func TestExternalAgentBudget(t *testing.T) {
	for _, tc := range []struct {
		name, budget, reason string
	}{
		{"tokens", "budget: {max_tokens: 50}\n", "max_tokens 50: 60 spent"},
		// 40 in and 20 out at $1000 per million tokens: $0.06.
		{"cost", "budget: {max_cost_usd: 0.05}\n", "max_cost_usd 0.0500: $0.0600 spent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := externalSpec(t, chatCall+`call m1; call m1; call m1`,
				"  - text: one\n    usage: {input_tokens: 40, output_tokens: 20}\n  - text: two\n  - text: three\n", tc.budget)
			sp.Model.Price = &spec.Price{Input: 1000, Output: 1000}
			res, evs, out := runExternal(t, sp)
			if res.Status != session.StatusBudgetExceeded || !strings.HasPrefix(res.Reason, tc.reason) {
				t.Fatalf("result = %+v, want budget_exceeded with %q (events %s)", res, tc.reason, kinds(evs))
			}
			if strings.Contains(out, "two") || !strings.Contains(out, "budget_exceeded") {
				t.Errorf("agent output %q: the second call was served, or its error is not budget_exceeded", out)
			}
			if n := strings.Count(kinds(evs), "assistant_message"); n != 1 {
				t.Errorf("%d assistant messages recorded, want 1", n)
			}
		})
	}
}

// TestExternalAgentEnds: wall time stops a program that runs on; a
// non-zero exit fails the run with the end of its output; an exit 0 runs
// the done checks.
func TestExternalAgentEnds(t *testing.T) {
	for _, tc := range []struct {
		name, script, extra string
		status              session.Status
		reason              string
		within              time.Duration
	}{
		{"max_wall", "sleep 30", "budget: {max_wall: 1s}\n", session.StatusBudgetExceeded, "max_wall 1s", 15 * time.Second},
		{"exit status", "echo boom >&2; exit 3", "", session.StatusFailed, "agent_failed: the agent sh exited with status 3; its output ends: boom", 15 * time.Second},
		{"done check fails", "echo hi > out.txt", "done: [{command: \"grep -q bye out.txt\"}]\n", session.StatusFailed, runner.ReasonEvaluationFailed, 15 * time.Second},
		{"done check passes", "echo bye > out.txt", "done: [{command: \"grep -q bye out.txt\"}]\n", session.StatusDone, "", 15 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			res, evs, _ := runExternal(t, externalSpec(t, tc.script, "  - text: x\n", tc.extra))
			if res.Status != tc.status || !strings.HasPrefix(res.Reason, tc.reason) {
				t.Errorf("result = %s %q, want %s %q… (events %s)", res.Status, res.Reason, tc.status, tc.reason, kinds(evs))
			}
			if d := time.Since(began); d > tc.within {
				t.Errorf("took %s", d)
			}
		})
	}
}

// TestAgentEnv: the SDK variables point at the proxy and win over
// agent.env and sandbox.env; agent.env applies otherwise.
func TestAgentEnv(t *testing.T) {
	t.Setenv("AGENTCTL_TEST_PASS", "passed")
	sp := &spec.Spec{Model: spec.Model{Provider: "scripted", ID: "m1"},
		Agent:   &spec.Agent{Command: []string{"x"}, Env: map[string]string{"A": "1", "DISABLE_TELEMETRY": "0"}},
		Sandbox: spec.Sandbox{Env: []string{"AGENTCTL_TEST_PASS", "OPENAI_BASE_URL"}}}
	t.Setenv("OPENAI_BASE_URL", "http://elsewhere")
	env := map[string]string{}
	for _, kv := range agentEnv(sp, "/ws", "http://127.0.0.1:4141/s/abc", "abc", "do it", dummyKey, false) {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := env[k]; dup {
			t.Errorf("%s set twice", k)
		}
		env[k] = v
	}
	want := map[string]string{
		"OPENAI_BASE_URL": "http://127.0.0.1:4141/s/abc/v1", "ANTHROPIC_BASE_URL": "http://127.0.0.1:4141/s/abc",
		"OPENAI_API_KEY": dummyKey, "ANTHROPIC_API_KEY": dummyKey, "OPENAI_DEFAULT_MODEL": "m1", "ANTHROPIC_MODEL": "m1",
		"AGENTCTL_PROMPT": "do it", "AGENTCTL_SESSION_ID": "abc", "HOME": "/ws", "TMPDIR": "/tmp",
		"A": "1", "DISABLE_TELEMETRY": "0", "AGENTCTL_TEST_PASS": "passed", "OPENAI_AGENTS_DISABLE_TRACING": "1",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
}

// TestExternalAgentUpstream: with a real provider the proxy, outside the
// sandbox, forwards the program's call upstream with the key of
// model.api_key_env, which the program's SDK sent; the key is not
// recorded.
func TestExternalAgentUpstream(t *testing.T) {
	testenv.NeedSandbox(t)
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		t.Skip("no curl")
	}
	const key = "sk-agentctl-test-upstream-key-0123456789"
	t.Setenv("AGENTCTL_TEST_UPSTREAM_KEY", key)
	got := make(chan string, 4)
	up := http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Path + " " + r.Header.Get("Authorization")
		w.Header().Set("content-type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"From upstream."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go up.Serve(ln)
	defer up.Close()
	sp := externalSpec(t, chatCall+`call gpt-4o-mini`, "  - text: x\n", "")
	sp.Model = spec.Model{Provider: "openai", ID: "gpt-4o-mini", BaseURL: "http://" + ln.Addr().String() + "/v1", APIKeyEnv: "AGENTCTL_TEST_UPSTREAM_KEY"}
	b, err := proxy.NewUpstream(sp.Model.BaseURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := recorder.Store{Root: t.TempDir()}
	res, err := runner.Start(context.Background(), runner.Config{Spec: sp, Store: st, Agent: &Agent{Backend: b}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != session.StatusDone || res.InputTokens != 5 || res.OutputTokens != 2 {
		t.Errorf("result = %+v, want done with the upstream's 5+2 tokens", res)
	}
	select {
	case g := <-got:
		if g != "/v1/chat/completions Bearer "+key {
			t.Errorf("upstream saw %q", g)
		}
	default:
		t.Fatal("the upstream was never called")
	}
	files := 0
	filepath.WalkDir(st.SessionDir(res.SessionID), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), key) {
			t.Errorf("%s holds the API key", p)
		}
		return nil
	})
	if files < 3 {
		t.Errorf("only %d files in the session folder: nothing was checked", files)
	}
}

// TestExternalAgentGetsNoKey: the agent is a program agentctl does not
// trust with the provider's key (it could print it, encoded past the
// redactor, or send it elsewhere): its environment holds a placeholder,
// and the proxy puts the real key on the calls it forwards upstream.
// The agent here dumps its environment, base64-encoded, to its output,
// as the red team's agent did.
func TestExternalAgentGetsNoKey(t *testing.T) {
	testenv.NeedSandbox(t)
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		t.Skip("no curl")
	}
	const key = "sk-ant-api03-agentctl-real-key-0123456789abcdef"
	t.Setenv("ANTHROPIC_API_KEY", key)
	got := make(chan http.Header, 4)
	up := http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.Header().Set("content-type", "application/json")
		fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"From upstream."}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":2}}`)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go up.Serve(ln)
	defer up.Close()
	script := `env | base64 -w0; echo; env > env.txt; curl -s "$ANTHROPIC_BASE_URL/v1/messages" -H 'content-type: application/json' -H "x-api-key: $ANTHROPIC_API_KEY" -H 'anthropic-version: 2023-06-01' -d '{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}'; echo`
	sp := externalSpec(t, script, "  - text: x\n", "")
	sp.Model = spec.Model{Provider: "anthropic", ID: "claude-sonnet-4-5", BaseURL: "http://" + ln.Addr().String()}
	b, err := proxy.NewUpstream(sp.Model.BaseURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := recorder.Store{Root: t.TempDir()}
	res, err := runner.Start(context.Background(), runner.Config{Spec: sp, Store: st, Agent: &Agent{Backend: b}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != session.StatusDone || res.OutputTokens != 2 {
		t.Errorf("result = %+v, want done with the upstream's answer", res)
	}
	select {
	case h := <-got:
		if h.Get("X-Api-Key") != key || h.Get("Authorization") != "" {
			t.Errorf("upstream got x-api-key %q, authorization %q: want the real key", h.Get("X-Api-Key"), h.Get("Authorization"))
		}
	default:
		t.Fatal("the upstream was never called")
	}
	dir := st.SessionDir(res.SessionID)
	out, err := os.ReadFile(filepath.Join(dir, recorder.ArtifactsDir, AgentOutput))
	if err != nil {
		t.Fatal(err)
	}
	dump, err := base64.StdEncoding.DecodeString(strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]))
	if err != nil || !strings.Contains(string(dump), "ANTHROPIC_API_KEY="+dummyKey) {
		t.Fatalf("the agent's environment (decoded from its output %q): %v; want its ANTHROPIC_API_KEY to be the placeholder", out, err)
	}
	if strings.Contains(string(dump), key) {
		t.Errorf("the agent's environment holds the real key")
	}
	files := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		if b, err := os.ReadFile(p); err == nil && (strings.Contains(string(b), key) || strings.Contains(string(b), key[len(key)-16:])) {
			t.Errorf("%s holds the API key", p)
		}
		return nil
	})
	if files < 4 {
		t.Errorf("only %d files in the session folder: nothing was checked", files)
	}
}
