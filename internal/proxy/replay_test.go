package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"

	"github.com/agentctl/agentctl/internal/session"
)

// conversation2 is a two-call agent loop in a wire format: the prompt,
// then the tool result of the first answer's call.
type loop struct {
	path  string
	first string
	// second builds the second request from the first answer's tool call id
	// and the tool output.
	second func(callID, output string) string
}

func chatLoop(model string) loop {
	sys := map[string]any{"role": "system", "content": "Today is " + model}
	user := map[string]any{"role": "user", "content": "Read the readme."}
	return loop{path: "/v1/chat/completions",
		first: string(marshal(map[string]any{"model": "gpt-4o", "stream": true, "messages": []any{sys, user}})),
		second: func(id, out string) string {
			return string(marshal(map[string]any{"model": "gpt-4o", "stream": true, "messages": []any{sys, user,
				map[string]any{"role": "assistant", "content": "Let me look.", "tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "read_file", "arguments": `{"path":"README.md"}`}}}},
				map[string]any{"role": "tool", "tool_call_id": id, "content": out}}}))
		}}
}

// record runs the chat loop against the scripted model and returns the
// recorded session's sink and the raw answers.
func recordLoop(t *testing.T, l loop) (*MemSink, [][]byte) {
	t.Helper()
	srv, mem, base := startProxy(t, Config{Backend: NewScripted(loadScript(t, testScript), "")})
	_, a1 := post(t, base+l.path, l.first)
	_, a2 := post(t, base+l.path, l.second("call_1_0", "hello"))
	evs := only(t, srv, mem)
	if got := kinds(evs); got != "session_started user_message assistant_message model_call tool_result assistant_message model_call" {
		t.Fatalf("recorded kinds = %s", got)
	}
	return mem.Get(mem.IDs()[0]), [][]byte{a1, a2}
}

func replayOf(t *testing.T, rec *MemSink, cfg ReplayConfig) *Replay {
	t.Helper()
	cfg.Events, cfg.Artifacts = rec.Events(), rec.ReadArtifact
	r, err := NewReplay(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestReplayByteIdentical serves a recording with no upstream at all: the
// answers are the recorded bytes, and a changed date in the system text
// (volatile) is normalised, reported by name, and served. (Before the one
// matcher, any system text was volatile: a changed word there passed.)
func TestReplayByteIdentical(t *testing.T) {
	rec, answers := recordLoop(t, chatLoop(day(0)))
	r := replayOf(t, rec, ReplayConfig{})
	srv, mem, base := startProxy(t, Config{Backend: r})
	l := chatLoop(day(1)) // another day: the system text differs
	_, b1 := post(t, base+l.path, l.first)
	_, b2 := post(t, base+l.path, l.second("call_1_0", "hello"))
	if string(b1) != string(answers[0]) || string(b2) != string(answers[1]) {
		t.Fatalf("replayed bytes differ from the recording:\n%s\nwant\n%s", b1, answers[0])
	}
	if r.Diverged() || len(r.Findings()) != 0 {
		t.Fatalf("findings = %+v, want none", r.Findings())
	}
	if got := r.Normalised(); len(got) != 1 || got[0].Name != "date-time" || got[0].Count != 2 || !slices.Equal(got[0].Turns, []int{1, 2}) {
		t.Fatalf("normalised = %+v, want date-time 2 in turns 1 and 2", got)
	}
	if got := kinds(only(t, srv, mem)); got != "session_started user_message assistant_message model_call tool_result assistant_message model_call" {
		t.Errorf("replayed session kinds = %s", got)
	}

	// A changed word in the system text is no volatile span: it fails.
	other := replayOf(t, rec, ReplayConfig{})
	_, _, obase := startProxy(t, Config{Backend: other})
	lo := chatLoop(day(0) + ", be brief")
	if st, out := post(t, obase+lo.path, lo.first); st != 400 || !strings.Contains(string(out), "system: log has") || !strings.Contains(string(out), "be brief") {
		t.Fatalf("changed system text: status %d %s, want a 400 naming turn 1's system text", st, out)
	}

	// --strict: the same difference fails, and the SDK shows it.
	strict := replayOf(t, rec, ReplayConfig{Strict: true})
	_, _, sbase := startProxy(t, Config{Backend: strict})
	cl := openaiClient(sbase)
	_, err := cl.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("Today is " + day(1)), openai.UserMessage("Read the readme.")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "turn 1") {
		t.Fatalf("strict replay err = %v, want a 400 naming turn 1", err)
	}
	if !strict.Diverged() {
		t.Error("strict replay did not report the divergence")
	}
}

// TestReplayDivergence: a different tool result is a real mismatch; the
// SDK sees an error naming the turn and what differs, and nothing is
// forwarded anywhere.
func TestReplayDivergence(t *testing.T) {
	rec, _ := recordLoop(t, chatLoop("Monday"))
	r := replayOf(t, rec, ReplayConfig{})
	_, _, base := startProxy(t, Config{Backend: r})
	l := chatLoop("Monday")
	if st, _ := post(t, base+l.path, l.first); st != 200 {
		t.Fatalf("turn 1 status %d", st)
	}
	var msgs []openai.ChatCompletionMessageParamUnion
	var body map[string]json.RawMessage
	json.Unmarshal([]byte(l.second("call_1_0", "goodbye")), &body)
	if err := json.Unmarshal(body["messages"], &msgs); err != nil {
		t.Fatal(err)
	}
	cl := openaiClient(base)
	st := cl.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: msgs})
	for st.Next() {
	}
	var apiErr *openai.Error
	if err := st.Err(); !errors.As(err, &apiErr) || !strings.Contains(apiErr.Message, "turn 2") || !strings.Contains(apiErr.Message, `"hello"`) || !strings.Contains(apiErr.Message, `"goodbye"`) {
		t.Fatalf("err = %v, want an error naming turn 2 and both tool results", err)
	}
	if !r.Diverged() {
		t.Fatal("Diverged() = false")
	}
}

// TestReplayFork: --on-miss upstream forwards from the first miss on, and
// --until N replays N turns then goes live; both record the live turns.
func TestReplayFork(t *testing.T) {
	rec, answers := recordLoop(t, chatLoop("Monday"))
	live := corpusFile(t, oaDir+"e2aad469b71d1d4894ff833ea147020a9d875eb7ce644a0ff355581690a4cbfd.bin")
	l := chatLoop("Monday")

	t.Run("on-miss", func(t *testing.T) {
		up := newUpstream(t, reply{200, sse, live, false})
		ub, _ := NewUpstream(up.URL, nil)
		r := replayOf(t, rec, ReplayConfig{OnMiss: ub})
		srv, mem, base := startProxy(t, Config{Backend: r, Header: session.Event{ParentSessionID: rec.ID}})
		_, b1 := post(t, base+l.path, l.first)
		_, b2 := post(t, base+l.path, l.second("call_1_0", "goodbye"))
		if string(b1) != string(answers[0]) || string(b2) != string(live) || up.seen() != 1 {
			t.Fatalf("fork: turn 1 from the recording %t, turn 2 live %t, upstream calls %d", string(b1) == string(answers[0]), string(b2) == string(live), up.seen())
		}
		f := r.Findings()
		if len(f) != 1 || !f[0].Forked || f[0].Turn != 2 {
			t.Fatalf("findings = %+v, want one fork at turn 2", f)
		}
		evs := only(t, srv, mem)
		if evs[0].ParentSessionID != rec.ID {
			t.Errorf("fork header parent = %q, want %q", evs[0].ParentSessionID, rec.ID)
		}
		if mc := lastOf(evs, session.KindModelCall); mc.InputTokens != 14 || mc.OutputTokens != 30 {
			t.Errorf("live turn tokens = %d/%d, want the upstream's 14/30", mc.InputTokens, mc.OutputTokens)
		}
	})
	t.Run("until", func(t *testing.T) {
		up := newUpstream(t, reply{200, sse, live, false})
		ub, _ := NewUpstream(up.URL, nil)
		r := replayOf(t, rec, ReplayConfig{Until: 1, Live: WithModel(ub, "gpt-4o-mini")})
		_, _, base := startProxy(t, Config{Backend: r})
		_, b1 := post(t, base+l.path, l.first)
		_, b2 := post(t, base+l.path, l.second("call_1_0", "hello"))
		if string(b1) != string(answers[0]) || string(b2) != string(live) || up.seen() != 1 {
			t.Fatalf("until 1: turn 1 replayed %t, turn 2 live %t, upstream calls %d", string(b1) == string(answers[0]), string(b2) == string(live), up.seen())
		}
		if r.Diverged() {
			t.Errorf("findings = %+v", r.Findings())
		}
	})
}

// TestReplayAnthropicSDK replays a Messages recording to the official SDK,
// streaming, with no upstream.
func TestReplayAnthropicSDK(t *testing.T) {
	srv, mem, base := startProxy(t, Config{Backend: NewScripted(loadScript(t, testScript), "")})
	params := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 1024,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Read the readme."))}}
	run := func(base string) []anthropic.Message {
		cl := anthropicClient(base)
		var out []anthropic.Message
		p := params
		for i := 0; i < 2; i++ {
			st := cl.Messages.NewStreaming(context.Background(), p)
			var m anthropic.Message
			for st.Next() {
				m.Accumulate(st.Current())
			}
			if err := st.Err(); err != nil {
				t.Fatalf("call %d: %v", i+1, err)
			}
			out = append(out, m)
			if i == 0 {
				p.Messages = append(p.Messages, m.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(m.Content[1].ID, "hello", false)))
			}
		}
		return out
	}
	want := run(base)
	evs := only(t, srv, mem)
	rec := mem.Get(mem.IDs()[0])
	_ = evs
	r := replayOf(t, rec, ReplayConfig{})
	_, _, rbase := startProxy(t, Config{Backend: r})
	got := run(rbase)
	for i := range want {
		if got[i].RawJSON() != want[i].RawJSON() {
			t.Errorf("replayed call %d = %s, want %s", i+1, got[i].RawJSON(), want[i].RawJSON())
		}
	}
	if r.Diverged() {
		t.Errorf("findings = %+v", r.Findings())
	}
}

// TestReplayRedacted: the recording holds a secret redacted; the agent
// sends it again in clear on replay, and that is no divergence.
func TestReplayRedacted(t *testing.T) {
	t.Setenv("MY_SERVICE_TOKEN", "s3cr3t-value-0123456789")
	body := string(marshal(map[string]any{"model": "gpt-4o", "messages": []any{map[string]any{"role": "user", "content": "token s3cr3t-value-0123456789"}}}))
	srv, mem, base := startProxy(t, Config{Backend: NewScripted(loadScript(t, testScript), "")})
	post(t, base+"/v1/chat/completions", body)
	only(t, srv, mem)
	rec := mem.Get(mem.IDs()[0])
	if a, _ := rec.ReadArtifact(string(mustAttr(t, lastOf(rec.Events(), session.KindModelCall), "request_artifact"))); strings.Contains(string(a), "s3cr3t") {
		t.Fatalf("request artifact holds the secret: %s", a)
	}
	r := replayOf(t, rec, ReplayConfig{})
	_, _, rbase := startProxy(t, Config{Backend: r})
	if st, b := post(t, rbase+"/v1/chat/completions", body); st != 200 || r.Diverged() {
		t.Fatalf("replay: %d %s %+v", st, b, r.Findings())
	}
}

func mustAttr(t *testing.T, e session.Event, k string) string {
	t.Helper()
	var a map[string]any
	json.Unmarshal(e.Attrs, &a)
	v, _ := a[k].(string)
	if v == "" {
		t.Fatalf("%s has no attr %s: %s", e.Kind, k, e.Attrs)
	}
	return v
}

// TestReplayWithoutArtifacts: a session whose requests were not recorded
// byte for byte (collected, imported, agentctl run; here a proxied one
// read without its artifacts) is still compared, with the conversation
// its events hold at each turn: the same program passes, one that asks
// another question diverges at turn 1 naming the message and both texts,
// under the default and under --strict. (Before the one matcher, such a
// replay served any request.)
func TestReplayWithoutArtifacts(t *testing.T) {
	rec, _ := recordLoop(t, chatLoop("Monday"))
	events := func(cfg ReplayConfig) *Replay {
		cfg.Events = rec.Events()
		r, err := NewReplay(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	l := chatLoop("Monday")
	same := events(ReplayConfig{})
	_, _, base := startProxy(t, Config{Backend: same})
	if st, out := post(t, base+l.path, l.first); st != 200 {
		t.Fatalf("the same program, turn 1: status %d %s", st, out)
	}
	if st, out := post(t, base+l.path, l.second("call_1_0", "hello")); st != 200 {
		t.Fatalf("the same program, turn 2: status %d %s", st, out)
	}
	if same.Diverged() {
		t.Fatalf("the same program diverged: %+v", same.Findings())
	}
	other := strings.Replace(l.first, "Read the readme.", "Read the licence.", 1)
	for _, strict := range []bool{false, true} {
		r := events(ReplayConfig{Strict: strict})
		_, _, base := startProxy(t, Config{Backend: r})
		st, out := post(t, base+l.path, other)
		if st != 400 || !strings.Contains(string(out), "message 1 (user content)") || !strings.Contains(string(out), `Read the readme.`) || !strings.Contains(string(out), `Read the licence.`) {
			t.Errorf("strict=%t: another question: status %d %s, want a 400 naming message 1 and both texts", strict, st, out)
		}
		if f := r.Findings(); len(f) != 1 || !f[0].Fatal || f[0].Difference == nil || f[0].Difference.Turn != 1 || f[0].Difference.Message != 1 {
			t.Errorf("strict=%t: findings = %+v, want one fatal difference at turn 1, message 1", strict, f)
		}
	}
}

// day is the calendar date n days from now: the date a program puts in its
// prompt is its clock's, and replaymatch takes a date for volatile only
// when one of the runs' clocks showed it.
func day(n int) string { return time.Now().UTC().AddDate(0, 0, n).Format(time.DateOnly) }
