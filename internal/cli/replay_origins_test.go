package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/otelsession/oteltest"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv"
)

// TestReplayEveryOrigin is issue 39's first "done when": a session of each
// origin (proxied, collected, imported OTLP, imported transcript, own
// run), replayed with `agentctl proxy --replay` to a program that sends a
// different user message, exits 6 under the default match and under
// --strict, naming the turn and the message; the same program unchanged
// passes. The proxied, collected and imported-OTLP sessions are of the
// real order-support app of fixtures/otel (its AGENT_TASK is the user
// message; needs AGENTCTL_NPM_OTEL); the transcript's and the own run's
// program sends the first request their events hold (curl).
//
// Before the one matcher, only the proxied session could fail: the
// others had no request_artifact and every request was served.
func TestReplayEveryOrigin(t *testing.T) {
	t.Parallel() // long, and self-contained: it overlaps the scripts' tail
	changedTask := "AGENT_TASK=Where is my order A-1043?"
	t.Run("own run", func(t *testing.T) {
		home := t.TempDir()
		agentctlOut(t, home, "run", testenv.Fixture("agents", "fix-typo.yaml"), "--session-id", "own1")
		same, changed := firstRequestPrograms(t, home, "own1")
		replayOrigin(t, home, "own1", same, changed)
	})
	t.Run("imported transcript", func(t *testing.T) {
		home := t.TempDir()
		src := filepath.Join("..", "..", "testdata", "corpus", "transcripts", "codex", "jazzyalex__agent-sessions", "small.jsonl")
		agentctlOut(t, home, "import", "codex", src)
		ids := sessionIDs(t, home)
		if len(ids) != 1 {
			t.Fatalf("import wrote %v, want one session", ids)
		}
		same, changed := firstRequestPrograms(t, home, ids[0])
		replayOrigin(t, home, ids[0], same, changed)
	})

	dir := oteltest.PrepareApps(t) // skips without AGENTCTL_NPM_OTEL
	e := oteltest.Emitters[1]      // openinference: one session per conversation
	if e.Name != "openinference" {
		t.Fatalf("emitter %s, want openinference", e.Name)
	}
	app := program{cmd: oteltest.Command(dir, e), env: []string{"OTEL_TRACES_EXPORTER=none", "OTEL_LOGS_EXPORTER=none"}}
	changedApp := app
	changedApp.env = append(append([]string{}, app.env...), changedTask)

	t.Run("proxied", func(t *testing.T) {
		home := t.TempDir()
		if out, stderr, err := runUnderProxy(t, home, []string{"--script", oteltest.ModelScript(), "--session", "truth"}, dir, e, app.env...); err != nil {
			t.Fatalf("the app under the scripted model: %v\n%s\n%s", err, out, stderr)
		}
		replayOrigin(t, home, "truth", app, changedApp)
	})
	t.Run("collected", func(t *testing.T) {
		chome, mhome := t.TempDir(), t.TempDir()
		c := startCollector(t, chome)
		if out, stderr, err := runUnderProxy(t, mhome, []string{"--script", oteltest.ModelScript(), "--session", "truth"}, dir, e, oteltest.ExportEnv(c.http, oteltest.HTTPProtobuf)...); err != nil {
			t.Fatalf("the app under the scripted model: %v\n%s\n%s", err, out, stderr)
		}
		c.stop(t)
		ids := sessionIDs(t, chome)
		if len(ids) != 1 {
			t.Fatalf("collect wrote %v, want one session", ids)
		}
		replayOrigin(t, chome, ids[0], app, changedApp)
	})
	t.Run("imported OTLP", func(t *testing.T) {
		home := t.TempDir()
		agentctlOut(t, home, "import", "otlp", filepath.Join("..", "..", "testdata", "otel", e.Name, "http-json", "001-traces.json"))
		ids := sessionIDs(t, home)
		if len(ids) != 1 {
			t.Fatalf("import otlp wrote %v, want one session", ids)
		}
		replayOrigin(t, home, ids[0], app, changedApp)
	})
}

// program is what runs behind the replaying proxy.
type program struct {
	cmd []string
	env []string
}

// replayOrigin replays session id of home to the unchanged program (it
// must pass) and to the changed one (exit 6 naming turn 1, message 1, by
// default and under --strict).
func replayOrigin(t *testing.T, home, id string, same, changed program) {
	t.Helper()
	code, stderr := replayTo(t, home, id, nil, same)
	if code != 0 || strings.Contains(stderr, `"diverged":true`) {
		t.Fatalf("the unchanged program: exit %d, want 0\n%s", code, stderr)
	}
	for _, strict := range []bool{false, true} {
		var args []string
		if strict {
			args = []string{"--strict"}
		}
		code, stderr := replayTo(t, home, id, args, changed)
		if code != 6 {
			t.Errorf("strict=%t: the program with another user message: exit %d, want 6\n%s", strict, code, stderr)
			continue
		}
		res := finishedLine(t, stderr)
		if len(res.Findings) == 0 || res.Findings[0].Difference == nil {
			t.Errorf("strict=%t: findings %+v, want the difference", strict, res.Findings)
			continue
		}
		d := res.Findings[0].Difference
		if d.Turn != 1 || d.Message == 0 || d.Field != "content" || !strings.Contains(d.Replayed, "A-1043") && !strings.Contains(d.Replayed, "(changed)") {
			t.Errorf("strict=%t: difference %+v, want turn 1, the user message, both texts", strict, d)
		}
	}
}

type finished struct {
	Diverged bool `json:"diverged"`
	Findings []struct {
		Fatal      bool `json:"fatal"`
		Difference *struct {
			Turn     int    `json:"turn"`
			Message  int    `json:"message"`
			Field    string `json:"field"`
			Recorded string `json:"recorded"`
			Replayed string `json:"replayed"`
		} `json:"difference"`
	} `json:"findings"`
}

func finishedLine(t *testing.T, stderr string) finished {
	t.Helper()
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, `{"kind":"finished"`) {
			var f finished
			if err := json.Unmarshal([]byte(l), &f); err != nil {
				t.Fatalf("finished line %s: %v", l, err)
			}
			return f
		}
	}
	t.Fatalf("no finished line in:\n%s", stderr)
	return finished{}
}

// replayTo runs `agentctl proxy --replay ID ARGS --json -- PROGRAM` in a
// fresh folder and returns its exit code and stderr.
func replayTo(t *testing.T, home, id string, args []string, p program) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	full := append(append([]string{"--home", home, "proxy", "--replay", id}, args...), "--json", "--")
	cmd := exec.CommandContext(ctx, "agentctl", append(full, p.cmd...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), p.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), errb.String()
	}
	t.Fatalf("agentctl proxy --replay: %v", err)
	return 0, ""
}

// firstRequestPrograms writes the first request session id's events hold
// (its conversation before the first answer, the header's system text and
// tools) as a Chat Completions body, and one with its first user message
// changed, and returns the curl programs that send each.
func firstRequestPrograms(t *testing.T, home, id string) (program, program) {
	t.Helper()
	evs := showEvents(t, home, id)
	first := -1
	for i, e := range evs {
		if e.Kind == session.KindAssistantMessage {
			var a struct {
				FromRequest bool `json:"from_request"`
			}
			json.Unmarshal(e.Attrs, &a)
			if !a.FromRequest {
				first = i
				break
			}
		}
	}
	if first < 0 {
		t.Fatalf("session %s has no answer", id)
	}
	var hdr struct {
		Tools []string `json:"tools"`
	}
	json.Unmarshal(evs[0].Attrs, &hdr)
	body := func(change bool) string {
		var msgs []any
		if evs[0].System != "" {
			msgs = append(msgs, map[string]any{"role": "system", "content": evs[0].System})
		}
		changed := false
		for _, m := range session.Project(evs[:first], "") {
			if change && !changed && m.Role == session.RoleUser {
				m.Content += " (changed)"
				changed = true
			}
			w := map[string]any{"role": m.Role, "content": m.Content}
			if m.ToolCallID != "" {
				w["tool_call_id"] = m.ToolCallID
			}
			msgs = append(msgs, w)
		}
		req := map[string]any{"model": evs[0].Model, "messages": msgs}
		var defs []any
		for _, n := range hdr.Tools {
			defs = append(defs, map[string]any{"type": "function", "function": map[string]any{"name": n, "parameters": map[string]any{"type": "object"}}})
		}
		if defs != nil {
			req["tools"] = defs
		}
		b, _ := json.Marshal(req)
		p := filepath.Join(t.TempDir(), "body.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	send := func(file string) program {
		return program{cmd: []string{"sh", "-c", `curl -sS -f "$OPENAI_BASE_URL/chat/completions" -H 'content-type: application/json' -d @` + file}}
	}
	return send(body(false)), send(body(true))
}
