package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/agenthost"
	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/proxy"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/testenv"
)

// curlAgent is an external agent written with curl and jq, as a program on
// an SDK behaves: each Chat Completions call carries the whole history
// (the answers it got, then the next user message), so its requests are
// the same on every run as long as the answers are. It asks for model
// $2 of call, else $OPENAI_DEFAULT_MODEL, and prints each answer. $1 of
// call is the user message.
const curlAgent = `set -e
msgs='[]'
call() {
  msgs=$(printf '%s' "$msgs" | jq -c --arg u "$1" '. + [{role:"user",content:$u}]')
  body=$(jq -nc --arg m "${2:-$OPENAI_DEFAULT_MODEL}" --argjson msgs "$msgs" '{model:$m,messages:$msgs}')
  out=$(curl -s "$OPENAI_BASE_URL/chat/completions" -H 'content-type: application/json' -H "authorization: Bearer $OPENAI_API_KEY" -d "$body")
  ans=$(printf '%s' "$out" | jq -r '.choices[0].message.content // ("ERROR " + .error.message)')
  echo "answer: $ans"
  case "$ans" in ERROR*) exit 1;; esac
  msgs=$(printf '%s' "$msgs" | jq -c --arg a "$ans" '. + [{role:"assistant",content:$a}]')
}
`

func forkSpec(t *testing.T, calls []string, turns, extra string) *spec.Spec {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "model.yaml"), []byte("turns:\n"+turns), 0o644)
	script := curlAgent
	for _, c := range calls {
		script += "call " + c + "\n"
	}
	y := fmt.Sprintf("name: ext\nmodel: {provider: scripted, id: m1, script: model.yaml}\nprompt: go\nagent:\n  command: [sh, -c, %q]\n%s", script, extra)
	os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte(y), 0o644)
	sp, err := spec.Load(filepath.Join(dir, "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func scriptedBackend(t *testing.T, file, model string) proxy.Backend {
	t.Helper()
	s, err := provider.LoadScript(file)
	if err != nil {
		t.Fatal(err)
	}
	return proxy.NewScripted(s, model)
}

// modelCalls returns the model_call events of evs and the bytes of their
// recorded responses.
func modelCalls(t *testing.T, st recorder.Store, id string, evs []session.Event) ([]session.Event, [][]byte) {
	t.Helper()
	var calls []session.Event
	var bodies [][]byte
	for _, e := range evs {
		if e.Kind != session.KindModelCall {
			continue
		}
		var a struct {
			ResponseArtifact string `json:"response_artifact"`
		}
		json.Unmarshal(e.Attrs, &a)
		b, err := proxy.ReadArtifact(st.SessionDir(id), a.ResponseArtifact)
		if err != nil {
			t.Fatalf("model_call seq %d: %v", e.Seq, err)
		}
		calls, bodies = append(calls, e), append(bodies, b)
	}
	return calls, bodies
}

// TestForkExternal: a fork of an external agent's session at the seq of
// its second model call runs the agent again; its first two calls are
// answered with the parent's recorded bytes, the third by another
// scripted model from that model's first turn, recorded after a
// model_changed; the header links the fork to its parent; and the fork's
// own log replays with no divergence.
func TestForkExternal(t *testing.T) {
	testenv.NeedSandbox(t)
	for _, tool := range []string{"/usr/bin/curl", "/usr/bin/jq"} {
		if _, err := os.Stat(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	sp := forkSpec(t, []string{"one", "two", "three"},
		"  - text: A1\n    usage: {input_tokens: 40, output_tokens: 20}\n  - text: A2\n    usage: {input_tokens: 40, output_tokens: 20}\n  - text: A3\n", "")
	st := recorder.Store{Root: t.TempDir()}
	parent, err := runner.Start(context.Background(), runner.Config{Spec: sp, Store: st, Agent: &agenthost.Agent{Backend: scriptedBackend(t, sp.Model.Script, "m1")}})
	if err != nil || parent.Status != session.StatusDone {
		t.Fatalf("parent run: %+v, %v", parent, err)
	}
	pevs, _, err := st.Load(parent.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	pcalls, pbodies := modelCalls(t, st, parent.SessionID, pevs)
	if len(pcalls) != 3 {
		t.Fatalf("parent has %d model calls, want 3", len(pcalls))
	}
	from := pcalls[1].Seq
	alt := filepath.Join(t.TempDir(), "alt.yaml")
	os.WriteFile(alt, []byte("turns:\n  - text: ALT-FIRST\n  - text: ALT-SECOND\n"), 0o644)
	artifacts := func(rel string) ([]byte, error) { return proxy.ReadArtifact(st.SessionDir(parent.SessionID), rel) }

	rep, err := ForkExternal(context.Background(), ExternalForkConfig{Store: st, SessionID: parent.SessionID, Events: pevs, Artifacts: artifacts,
		From: from, Spec: sp, Live: scriptedBackend(t, alt, "m2"), Provider: "scripted", Model: "m2"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Result.Status != session.StatusDone || rep.Replayed != 2 || rep.RecordedTurns != 3 || rep.Live != 1 || !rep.ModelChanged || rep.Diverged {
		t.Fatalf("report = %+v, want done, 2 of 3 replayed, 1 live, model changed, no divergence", rep)
	}
	fevs, _, err := st.Load(rep.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if h := fevs[0]; h.ParentSessionID != parent.SessionID || h.ForkedFrom != from {
		t.Errorf("fork header parent %q forked_from %d, want %q %d", h.ParentSessionID, h.ForkedFrom, parent.SessionID, from)
	}
	if f := session.Fold(fevs); f.ParentSessionID != parent.SessionID || f.ForkedFrom != from || f.Model != "m2" {
		t.Errorf("fold: parent %q forked_from %d model %q", f.ParentSessionID, f.ForkedFrom, f.Model)
	}
	fcalls, fbodies := modelCalls(t, st, rep.SessionID, fevs)
	if len(fcalls) != 3 {
		t.Fatalf("fork has %d model calls, want 3 (events %v)", len(fcalls), fevs)
	}
	for i := range 2 {
		if string(fbodies[i]) != string(pbodies[i]) {
			t.Errorf("replayed call %d served\n%s\nrecorded\n%s", i+1, fbodies[i], pbodies[i])
		}
	}
	if !strings.Contains(string(fbodies[2]), "ALT-FIRST") || fcalls[2].Model != "m2" {
		t.Errorf("live call: model %q, body %s; want m2 answering the alt script's first turn", fcalls[2].Model, fbodies[2])
	}
	changed := -1
	for i, e := range fevs {
		if e.Kind == session.KindModelChanged {
			changed = i
		}
	}
	if changed < 0 || fevs[changed].Model != "m2" || fevs[changed].Seq < fcalls[1].Seq || fevs[changed].Seq > fcalls[2].Seq {
		t.Errorf("model_changed at index %d, want one to m2 between the replayed and the live call", changed)
	}
	out, _ := os.ReadFile(filepath.Join(st.SessionDir(rep.SessionID), recorder.ArtifactsDir, agenthost.AgentOutput))
	if got := string(out); !strings.Contains(got, "answer: A2") || !strings.Contains(got, "answer: ALT-FIRST") {
		t.Errorf("agent output %q", got)
	}

	// The fork is a recording of its own: replayed offline, the agent
	// gets its answers again and nothing diverges.
	rb, err := proxy.NewReplay(proxy.ReplayConfig{Events: fevs,
		Artifacts: func(rel string) ([]byte, error) { return proxy.ReadArtifact(st.SessionDir(rep.SessionID), rel) }})
	if err != nil {
		t.Fatal(err)
	}
	again, err := runner.Start(context.Background(), runner.Config{Spec: sp, Store: st, Agent: &agenthost.Agent{Backend: rb, ReplayOf: rep.SessionID}})
	if err != nil || again.Status != session.StatusDone || rb.Diverged() {
		t.Errorf("replay of the fork: %+v, %v, findings %v", again, err, rb.Findings())
	}
}

// TestForkExternalPolicy: the live part is held to the spec's budget
// (the replayed calls count, as a fork's copied events do), and an agent
// that asks something else than the recording in the replayed part gets a
// divergence naming the turn.
func TestForkExternalPolicy(t *testing.T) {
	testenv.NeedSandbox(t)
	for _, tool := range []string{"/usr/bin/curl", "/usr/bin/jq"} {
		if _, err := os.Stat(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	turns := "  - text: A1\n    usage: {input_tokens: 40, output_tokens: 20}\n  - text: A2\n    usage: {input_tokens: 40, output_tokens: 20}\n  - text: A3\n"
	sp := forkSpec(t, []string{"one", "two", "three"}, turns, "")
	st := recorder.Store{Root: t.TempDir()}
	parent, err := runner.Start(context.Background(), runner.Config{Spec: sp, Store: st, Agent: &agenthost.Agent{Backend: scriptedBackend(t, sp.Model.Script, "m1")}})
	if err != nil || parent.Status != session.StatusDone {
		t.Fatalf("parent run: %+v, %v", parent, err)
	}
	pevs, _, _ := st.Load(parent.SessionID)
	pcalls, _ := modelCalls(t, st, parent.SessionID, pevs)
	from := pcalls[1].Seq
	artifacts := func(rel string) ([]byte, error) { return proxy.ReadArtifact(st.SessionDir(parent.SessionID), rel) }
	for _, tc := range []struct {
		name   string
		spec   *spec.Spec
		status session.Status
		reason string
		find   string
	}{
		{"budget", forkSpec(t, []string{"one", "two", "three"}, turns, "budget: {max_tokens: 125}\n"), session.StatusBudgetExceeded, "max_tokens 125: 120 spent", ""},
		{"pinned", forkSpec(t, []string{"one", "two", "three m-other"}, turns, ""), session.StatusFailed, agenthost.ReasonAgentFailed, ""},
		// The divergence is why the fork failed, not the agent's dying of it.
		{"diverges", forkSpec(t, []string{"one", "TWO-CHANGED", "three"}, turns, ""), session.StatusFailed, session.ErrorTypeReplayDivergence, `message 3 (user content): log has "two", request has "TWO-CHANGED"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := ForkExternal(context.Background(), ExternalForkConfig{Store: st, SessionID: parent.SessionID, Events: pevs, Artifacts: artifacts,
				From: from, Spec: tc.spec, Live: scriptedBackend(t, sp.Model.Script, "m1")})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Result.Status != tc.status || !strings.HasPrefix(rep.Result.Reason, tc.reason) {
				t.Errorf("fork = %s %q, want %s %q…", rep.Result.Status, rep.Result.Reason, tc.status, tc.reason)
			}
			out, _ := os.ReadFile(filepath.Join(st.SessionDir(rep.SessionID), recorder.ArtifactsDir, agenthost.AgentOutput))
			if tc.name == "pinned" && !strings.Contains(string(out), `pinned to model "m1"; the request asked for "m-other"`) {
				t.Errorf("the live call for another model was not refused by the pin: %s", out)
			}
			if tc.find != "" {
				if !rep.Diverged || len(rep.Findings) == 0 || rep.Findings[0].Turn != 2 || !strings.Contains(rep.Findings[0].What, tc.find) {
					t.Errorf("findings %+v, want turn 2: %s", rep.Findings, tc.find)
				}
			}
		})
	}
	if _, err := ForkExternal(context.Background(), ExternalForkConfig{Store: st, SessionID: parent.SessionID, Events: pevs, Artifacts: artifacts,
		From: pcalls[1].Seq - 1, Spec: sp, Live: scriptedBackend(t, sp.Model.Script, "m1")}); err == nil || !strings.Contains(err.Error(), "separates an assistant message") {
		t.Errorf("a cut before a model_call: %v", err)
	}
}

// TestForkExternalUpstream: a fork onto a real provider's model forwards
// the live calls upstream asking for that model (the agent still asks for
// the recorded one) with the key of that provider's variable, which the
// agent's SDK was given; the replayed calls never reach the upstream.
func TestForkExternalUpstream(t *testing.T) {
	testenv.NeedSandbox(t)
	for _, tool := range []string{"/usr/bin/curl", "/usr/bin/jq"} {
		if _, err := os.Stat(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	const key = "sk-agentctl-test-fork-upstream-0123456789"
	t.Setenv("OPENAI_API_KEY", key)
	type seen struct{ model, auth string }
	got := make(chan seen, 8)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model string `json:"model"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		got <- seen{body.Model, r.Header.Get("Authorization")}
		w.Header().Set("content-type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-up","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"From upstream."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`, body.Model)
	}))
	defer up.Close()
	sp := forkSpec(t, []string{"one", "two"}, "  - text: A1\n  - text: A2\n", "")
	st := recorder.Store{Root: t.TempDir()}
	parent, err := runner.Start(context.Background(), runner.Config{Spec: sp, Store: st, Agent: &agenthost.Agent{Backend: scriptedBackend(t, sp.Model.Script, "m1")}})
	if err != nil || parent.Status != session.StatusDone {
		t.Fatalf("parent run: %+v, %v", parent, err)
	}
	pevs, _, _ := st.Load(parent.SessionID)
	pcalls, _ := modelCalls(t, st, parent.SessionID, pevs)
	live, err := proxy.NewUpstream(up.URL+"/v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ForkExternal(context.Background(), ExternalForkConfig{Store: st, SessionID: parent.SessionID, Events: pevs,
		Artifacts: func(rel string) ([]byte, error) { return proxy.ReadArtifact(st.SessionDir(parent.SessionID), rel) },
		From:      pcalls[0].Seq, Spec: sp, Live: live, Provider: "openai", Model: "gpt-4o-mini"})
	if err != nil || rep.Result.Status != session.StatusDone || rep.Replayed != 1 {
		t.Fatalf("fork = %+v, %v", rep, err)
	}
	close(got)
	var calls []seen
	for s := range got {
		calls = append(calls, s)
	}
	if len(calls) != 1 || calls[0] != (seen{"gpt-4o-mini", "Bearer " + key}) {
		t.Errorf("upstream saw %+v, want one call for gpt-4o-mini with the OpenAI key", calls)
	}
	fevs, _, _ := st.Load(rep.SessionID)
	fcalls, _ := modelCalls(t, st, rep.SessionID, fevs)
	if len(fcalls) != 2 || fcalls[1].Model != "gpt-4o-mini" || fcalls[1].InputTokens != 5 {
		t.Errorf("fork's model calls = %+v", fcalls)
	}
	if f := session.Fold(fevs); f.Provider != "openai" || f.Model != "gpt-4o-mini" {
		t.Errorf("fork's model in force = %s/%s, want openai/gpt-4o-mini", f.Provider, f.Model)
	}
}
