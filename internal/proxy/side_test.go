package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/replaymatch"
	"github.com/agentctl/agentctl/internal/session"
)

// The opencode requests of testdata/opencode-1.18.33 were captured from
// the real client: opencode-ai 1.18.33 from npm, `opencode run "Say
// hello"` then `opencode run -c "Now say goodbye"` in a folder holding
// its opencode.json (an OpenAI-compatible provider, @ai-sdk/openai-compatible,
// whose base URL was a loopback server that kept each request body and
// answered "Greeting Test" to the title call, "Hello there." to the
// others). opencode sent its title request (its own system prompt, no
// tools, "Generate a title for this conversation:") before the agent's
// first turn.

func opencodeBody(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/opencode-1.18.33/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// titleUpstream answers chat completions as the capture server did: the
// title call with a title, any other with a greeting, streamed.
func titleUpstream(t *testing.T) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		text := "Hello there."
		if strings.Contains(string(b), "Generate a title for this conversation") {
			text = "Greeting Test"
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish any) {
			c, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
			fmt.Fprintf(w, "data: %s\n\n", c)
		}
		chunk(map[string]any{"role": "assistant", "content": text}, nil)
		chunk(map[string]any{}, "stop")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// threads returns the sessions mem holds by id, and fails on any
// compaction: no thread of these recordings is one.
func noCompaction(t *testing.T, mem *MemSessions) map[string][]session.Event {
	t.Helper()
	out := map[string][]session.Event{}
	for _, id := range mem.IDs() {
		evs := mem.Get(id).Events()
		for _, e := range evs {
			if e.Kind == session.KindCompaction {
				t.Errorf("session %s records a compaction (seq %d, summary %q): a side call is not one", id, e.Seq, e.Summary)
			}
		}
		out[id] = evs
	}
	return out
}

const agentThread = "session_started user_message assistant_message model_call user_message assistant_message model_call"

// TestSideThreadOpencodeTitle records opencode's real requests on one
// session (/s/ URL), the title call first as opencode sent it, then after
// the agent's first turn: in either order the agent's conversation is one
// linear history and the title call a side thread, never a compaction.
func TestSideThreadOpencodeTitle(t *testing.T) {
	up := titleUpstream(t)
	title, turn1, turn2 := opencodeBody(t, "title"), opencodeBody(t, "turn1"), opencodeBody(t, "turn2")
	for _, tc := range []struct {
		name   string
		order  []string
		main   string // the kinds of session oc (its first thread)
		side   string // of oc-side1
		answer string // the side thread's answer
	}{
		{"title first (as captured)", []string{title, turn1, turn2}, "session_started user_message user_message assistant_message model_call", agentThread, "Hello there."},
		{"title after turn 1", []string{turn1, title, turn2}, agentThread, "session_started user_message user_message assistant_message model_call", "Greeting Test"},
		{"title last", []string{turn1, turn2, title}, agentThread, "session_started user_message user_message assistant_message model_call", "Greeting Test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := NewUpstream(up, nil)
			if err != nil {
				t.Fatal(err)
			}
			srv, mem, base := startProxy(t, Config{Backend: u})
			for i, b := range tc.order {
				if st, out := post(t, base+"/s/oc/v1/chat/completions", b); st != 200 {
					t.Fatalf("call %d: status %d: %s", i+1, st, out)
				}
			}
			waitIdle(t, srv)
			got := noCompaction(t, mem)
			if ids := strings.Join(mem.IDs(), " "); ids != "oc oc-side1" {
				t.Fatalf("sessions = %s, want oc and its side thread oc-side1", ids)
			}
			if k := kinds(got["oc"]); k != tc.main {
				t.Errorf("oc kinds = %s\nwant %s", k, tc.main)
			}
			side := got["oc-side1"]
			if k := kinds(side); k != tc.side {
				t.Errorf("oc-side1 kinds = %s\nwant %s", k, tc.side)
			}
			if of, n := session.SideThreadOf(side[0]); of != "oc" || n != 1 {
				t.Errorf("oc-side1 header: side thread %d of %q, want 1 of oc", n, of)
			}
			if a := lastOf(side, session.KindAssistantMessage); a.Text != tc.answer {
				t.Errorf("side thread answer = %q, want %q", a.Text, tc.answer)
			}
			if sids := srv.Sessions(); strings.Join(sids, " ") != "oc oc-side1" {
				t.Errorf("Sessions() = %v", sids)
			}
		})
	}
}

// chatReq builds a chat completions request body.
func chatReq(system string, tools []string, msgs ...map[string]any) string {
	all := []any{}
	if system != "" {
		all = append(all, map[string]any{"role": "system", "content": system})
	}
	for _, m := range msgs {
		all = append(all, m)
	}
	body := map[string]any{"model": "gpt-4o", "stream": true, "messages": all}
	if len(tools) > 0 {
		var ts []any
		for _, n := range tools {
			ts = append(ts, map[string]any{"type": "function", "function": map[string]any{"name": n, "parameters": map[string]any{"type": "object"}}})
		}
		body["tools"] = ts
	}
	return string(marshal(body))
}

func msg(role, content string) map[string]any {
	return map[string]any{"role": role, "content": content}
}

// TestRealCompactionStaysCompaction: a request that rewrites the history
// but shares the system text, a tool, or the first message with the
// session's conversation is the agent compacting it, as before side
// threads were told apart; a rule that took these for side threads would
// lose the compaction (and with it diagnose's anchoring check).
func TestRealCompactionStaysCompaction(t *testing.T) {
	const sys = "You are a coding agent."
	first := chatReq(sys, []string{"bash", "read"}, msg("user", "Fix the failing test in pkg/x."))
	for _, tc := range []struct {
		name, second string
	}{
		{"same system text", chatReq(sys, nil, msg("user", "Summary so far: the test fails on a nil map."), msg("user", "Go on."))},
		{"a shared tool", chatReq("You summarise.", []string{"read"}, msg("user", "Summary: a nil map."))},
		{"the first message pinned", chatReq("You summarise.", nil, msg("user", "Fix the failing test in pkg/x."), msg("user", "Summary: a nil map."))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, mem, base := startProxy(t, Config{Backend: titleBackend(t)})
			post(t, base+"/s/cp/v1/chat/completions", first)
			post(t, base+"/s/cp/v1/chat/completions", tc.second)
			evs := only(t, srv, mem)
			if got := kinds(evs); !strings.Contains(got, "compaction") {
				t.Fatalf("kinds = %s, want a compaction: the request shares something with the conversation", got)
			}
		})
	}
	// And the same shapes sharing nothing are a side thread.
	srv, mem, base := startProxy(t, Config{Backend: titleBackend(t)})
	post(t, base+"/s/cp/v1/chat/completions", first)
	post(t, base+"/s/cp/v1/chat/completions", chatReq("You summarise.", nil, msg("user", "Summary: a nil map.")))
	waitIdle(t, srv)
	noCompaction(t, mem)
	if ids := strings.Join(mem.IDs(), " "); ids != "cp cp-side1" {
		t.Fatalf("sessions = %s, want cp and cp-side1", ids)
	}
}

func titleBackend(t *testing.T) Backend {
	u, err := NewUpstream(titleUpstream(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// recordOpencode records opencode's three requests (title first, as
// captured) on session oc and returns the replay config of oc with its
// side thread.
func recordOpencode(t *testing.T) ReplayConfig {
	t.Helper()
	srv, mem, base := startProxy(t, Config{Backend: titleBackend(t)})
	for _, name := range []string{"title", "turn1", "turn2"} {
		if st, out := post(t, base+"/s/oc/v1/chat/completions", opencodeBody(t, name)); st != 200 {
			t.Fatalf("%s: status %d: %s", name, st, out)
		}
	}
	waitIdle(t, srv)
	oc, side := mem.Get("oc"), mem.Get("oc-side1")
	if oc == nil || side == nil {
		t.Fatalf("sessions = %v, want oc and oc-side1", mem.IDs())
	}
	return ReplayConfig{Events: oc.Events(), Artifacts: oc.ReadArtifact,
		Sides: []ReplayConfig{{Events: side.Events(), Artifacts: side.ReadArtifact}}}
}

// TestSideThreadReplay replays the recording with no upstream: whatever
// order the program sends the title call and the agent's turns in, each
// gets its own recorded answer and nothing diverges; a changed prompt of
// the agent's still diverges, naming its turn, and so does a changed
// title request.
func TestSideThreadReplay(t *testing.T) {
	cfg := recordOpencode(t)
	want := map[string]string{"title": "Greeting Test", "turn1": "Hello there.", "turn2": "Hello there."}
	for _, order := range [][]string{{"title", "turn1", "turn2"}, {"turn1", "title", "turn2"}, {"turn1", "turn2", "title"}} {
		t.Run(strings.Join(order, ","), func(t *testing.T) {
			r, err := NewReplay(cfg)
			if err != nil {
				t.Fatal(err)
			}
			srv, mem, base := startProxy(t, Config{Backend: r})
			for _, name := range order {
				// Run from another folder: the <env> block differs.
				b := strings.ReplaceAll(opencodeBody(t, name), "/tmp/side-oc/proj", "/tmp/elsewhere/proj")
				st, out := post(t, base+"/s/re/v1/chat/completions", b)
				if st != 200 || !strings.Contains(string(out), want[name]) {
					t.Fatalf("%s: status %d, answer %s; want %q", name, st, string(out), want[name])
				}
			}
			if r.Diverged() {
				t.Fatalf("findings = %+v, want none fatal", r.Findings())
			}
			// The agent's conversation is side thread 1 of the recording
			// (the title came first): what the normalisers changed in it
			// is in the report too.
			if sum := replaymatch.Summary(r.Normalised()); !strings.Contains(sum, "opencode-env 2 (turns 1-2)") {
				t.Errorf("normalised = %q, want the side thread's opencode-env 2 (turns 1-2)", sum)
			}
			waitIdle(t, srv)
			noCompaction(t, mem)
		})
	}
	for _, tc := range []struct{ name, from, to, what string }{
		{"turn2", `Now say goodbye`, `Now say farewell`, "turn 2"},
		{"title", `Generate a title for this conversation`, `Generate a name for this conversation`, "turn 1"},
	} {
		t.Run("changed "+tc.name, func(t *testing.T) {
			r, err := NewReplay(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, _, base := startProxy(t, Config{Backend: r})
			for _, name := range []string{"turn1", "title", "turn2"} {
				b := opencodeBody(t, name)
				if name == tc.name {
					b = strings.Replace(b, tc.from, tc.to, 1)
				}
				st, out := post(t, base+"/s/re/v1/chat/completions", b)
				if name == tc.name {
					if st != 400 || !strings.Contains(string(out), tc.what) {
						t.Fatalf("changed %s: status %d, %s; want a 400 divergence naming %s", name, st, out, tc.what)
					}
				} else if st != 200 {
					t.Fatalf("%s: status %d: %s", name, st, out)
				}
			}
			if !r.Diverged() {
				t.Fatal("the replay did not report the divergence")
			}
		})
	}
}

// TestSideThreadConcurrent sends the title call while the agent's first
// turn is in flight, as opencode does: whichever is served first, the
// other is its side thread, and the recording replays.
func TestSideThreadConcurrent(t *testing.T) {
	srv, mem, base := startProxy(t, Config{Backend: titleBackend(t)})
	errs := make(chan string, 2)
	for _, name := range []string{"title", "turn1"} {
		go func() {
			st, out := post(t, base+"/s/oc/v1/chat/completions", opencodeBody(t, name))
			if st != 200 {
				errs <- fmt.Sprintf("%s: status %d: %s", name, st, out)
				return
			}
			errs <- ""
		}()
	}
	for range 2 {
		if e := <-errs; e != "" {
			t.Fatal(e)
		}
	}
	if st, out := post(t, base+"/s/oc/v1/chat/completions", opencodeBody(t, "turn2")); st != 200 {
		t.Fatalf("turn2: status %d: %s", st, out)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	noCompaction(t, mem)
	if ids := strings.Join(mem.IDs(), " "); ids != "oc oc-side1" {
		t.Fatalf("sessions = %s", ids)
	}
	for _, id := range mem.IDs() {
		if k := kinds(mem.Get(id).Events()); !strings.HasSuffix(k, "session_finished") {
			t.Errorf("%s kinds = %s, want it finished", id, k)
		}
	}
}

// TestScriptedSideThread: a script's threads answer a client's side
// conversation from their own turns, picked by the request's system text,
// whichever order the client sends it in; the agent's conversation is
// served the script's turns as if the side call had not been made. With
// one sequence for every call, opencode's title call took the agent's
// first turn (a tool call) for its title.
func TestScriptedSideThread(t *testing.T) {
	script := loadScript(t, `
turns:
  - text: "Hello there."
  - text: "Hello there."
threads:
  - system: "You are a title generator."
    turns:
      - text: "Greeting Test"
`)
	title, turn1, turn2 := opencodeBody(t, "title"), opencodeBody(t, "turn1"), opencodeBody(t, "turn2")
	for _, tc := range []struct {
		name        string
		order       []string
		titleThread string // the session the title call is recorded in
	}{
		{"title first", []string{title, turn1, turn2}, "oc"},
		{"title after turn 1", []string{turn1, title, turn2}, "oc-side1"},
		{"title last", []string{turn1, turn2, title}, "oc-side1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, mem, base := startProxy(t, Config{Backend: NewScripted(script, "")})
			for i, b := range tc.order {
				if st, out := post(t, base+"/s/oc/v1/chat/completions", b); st != 200 {
					t.Fatalf("call %d: status %d: %s", i+1, st, out)
				}
			}
			waitIdle(t, srv)
			got := noCompaction(t, mem)
			agent := "oc-side1"
			if tc.titleThread == agent {
				agent = "oc"
			}
			if a := lastOf(got[tc.titleThread], session.KindAssistantMessage); a.Text != "Greeting Test" {
				t.Errorf("title thread %s answered %q, want the thread's turn %q", tc.titleThread, a.Text, "Greeting Test")
			}
			if k := kinds(got[agent]); k != agentThread {
				t.Errorf("agent thread %s kinds = %s\nwant %s", agent, k, agentThread)
			}
			for _, e := range got[agent] {
				if e.Kind == session.KindAssistantMessage && e.Text != "Hello there." {
					t.Errorf("agent thread %s answered %q, want the script's turns", agent, e.Text)
				}
			}
		})
	}
}

// TestSideThreadReplayDir: the folder a replay runs in, known only once
// replay run has made it (SetDir), reaches the side threads' matchers too,
// so a side thread that names the workspace replays from another folder
// as the session's conversation does.
func TestSideThreadReplayDir(t *testing.T) {
	const recDir, newDir = "/tmp/side-oc/proj", "/tmp/elsewhere/proj"
	body := func(name, dir string) string {
		b := strings.ReplaceAll(opencodeBody(t, name), `Say hello\"`, `Say hello to `+recDir+`/hello.txt\"`)
		return strings.ReplaceAll(b, recDir, dir)
	}
	srv, mem, base := startProxy(t, Config{Backend: titleBackend(t)})
	for _, name := range []string{"title", "turn1", "turn2"} {
		if st, out := post(t, base+"/s/oc/v1/chat/completions", body(name, recDir)); st != 200 {
			t.Fatalf("%s: status %d: %s", name, st, out)
		}
	}
	waitIdle(t, srv)
	oc, side := mem.Get("oc"), mem.Get("oc-side1")
	if oc == nil || side == nil {
		t.Fatalf("sessions = %v, want oc and oc-side1", mem.IDs())
	}
	// As a run records them: each thread's header names the workspace.
	ocEvs, sideEvs := oc.Events(), side.Events()
	ocEvs[0].Workspace, sideEvs[0].Workspace = recDir, recDir
	if !strings.Contains(body("turn1", recDir), recDir+"/hello.txt") {
		t.Fatal("the test's user message names no workspace path")
	}
	r, err := NewReplay(ReplayConfig{Events: ocEvs, Artifacts: oc.ReadArtifact,
		Sides: []ReplayConfig{{Events: sideEvs, Artifacts: side.ReadArtifact}}})
	if err != nil {
		t.Fatal(err)
	}
	r.SetDir(newDir)
	_, _, rbase := startProxy(t, Config{Backend: r})
	for _, name := range []string{"turn1", "title", "turn2"} {
		if st, out := post(t, rbase+"/s/re/v1/chat/completions", body(name, newDir)); st != 200 {
			t.Fatalf("%s from %s: status %d: %s", name, newDir, st, out)
		}
	}
	if r.Diverged() {
		t.Fatalf("findings = %+v, want none fatal", r.Findings())
	}
}
