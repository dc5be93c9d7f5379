package replaymatch

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/session"
)

// Real requests and transcripts the normalisers are tested on.
var (
	// The first request of Claude Code 2.1.328 through the proxy: its
	// system text has today's date and the temp folder the test ran in,
	// its metadata a session UUID and a hex user id.
	claudeRequest = filepath.Join("..", "proxy", "testdata", "claude-code-2.1.328-default-model.json")
	// A Codex CLI rollout: exec output with its measured wall time, the
	// session's cwd and timestamps.
	codexRollout = filepath.Join("..", "..", "testdata", "corpus", "transcripts", "codex", "codemie-ai__codemie-code", "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl")
	// A Claude Code transcript whose instructions set timeouts (settings,
	// not measures).
	claudeTranscript = filepath.Join("..", "..", "testdata", "corpus", "transcripts", "claude-code", "codemie-ai__codemie-code", "session-9eda1058.jsonl")
	// The order-support app's telemetry (OTel JS OpenAI instrumentation):
	// the user's question names an order.
	orderLogs = filepath.Join("..", "..", "testdata", "otel", "otel-openai", "http-json", "001-logs.json")
	// Its traces: trace and span ids.
	orderTraces = filepath.Join("..", "..", "testdata", "otel", "otel-openai", "http-json", "002-traces.json")
)

// around is the text of file around the first match of re (what a
// request carries), at most n bytes on either side.
func around(t *testing.T, file, re string, n int) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read real request text: %v", err)
	}
	loc := regexp.MustCompile(re).FindIndex(b)
	if loc == nil {
		t.Fatalf("%s has no %s", file, re)
	}
	from, to := max(0, loc[0]-n), min(len(b), loc[1]+n)
	return strings.ToValidUTF8(string(b[from:to]), "")
}

func user(s string) Request {
	return Request{Messages: []session.Message{{Role: session.RoleUser, Content: s}}}
}

// TestNormalisers: each normaliser of the table, on real request text of
// the client that produces the span, makes another run's text (the span
// changed as the next run changes it) match and counts it; and the same
// text with a real difference nearby (a changed word, an order id, a
// number that is not a duration, a file below the temp folder) still
// fails, under the whole table. --strict normalises nothing.
func TestNormalisers(t *testing.T) {
	tests := []struct {
		name     string // the normaliser
		text     string // real request text
		from, to string // the volatile span and another run's
		real     [2]string
		env      Env
	}{
		{name: "date-time", text: around(t, claudeRequest, `Today's date is 2026-12-02\.`, 200),
			from: "2026-12-02", to: "2027-01-09", real: [2]string{"Today's date", "Today's data"}},
		{name: "date-time", text: around(t, codexRollout, `"timestamp":"2026-05-11T10:28:45.482Z"`, 150),
			from: "2026-05-11T10:28:45.482Z", to: "2026-12-06T06:33:25.001Z", real: [2]string{`"timestamp"`, `"timestump"`}},
		{name: "duration", text: around(t, codexRollout, `Wall time: 0\.0000 seconds`, 200),
			from: "0.0000 seconds", to: "0.1799 seconds", real: [2]string{"exited with code 0", "exited with code 1"}},
		{name: "uuid", text: around(t, claudeRequest, `37c89844-16be-4677-a307-270bbf38a9d3`, 120),
			from: "37c89844-16be-4677-a307-270bbf38a9d3", to: "019e1695-0522-7c83-8b39-0dd379793f80", real: [2]string{"session_id", "sessions_id"}},
		{name: "hex-id", text: around(t, orderTraces, `"traceId":"b849f1440abfdabbb31d500351080dd1"`, 120),
			from: "b849f1440abfdabbb31d500351080dd1", to: "0a1b2c3d4e5f60718293a4b5c6d7e8f9", real: [2]string{`"traceId"`, `"spanId"`}},
		{name: "temp-path", text: around(t, claudeRequest, `Primary working directory: /tmp/go-test-script2614702457/`, 150),
			from: "/tmp/go-test-script2614702457", to: "/tmp/go-test-script99", real: [2]string{"proxy_claude_default_model/ws", "proxy_claude_default_model/wx"}},
		{name: "workspace-path", text: around(t, codexRollout, `"cwd":"/Users/Sample_User/naya"`, 150),
			from: "/Users/Sample_User/naya", to: "/home/ci/build/naya", env: Env{RecordedDir: "/Users/Sample_User/naya", ReplayDir: "/home/ci/build/naya"},
			real: [2]string{`"cwd"`, `"cwdx"`}},
		{name: "claude-code-system-reminder", text: around(t, claudeRequest, `(?s)<system-reminder>.*?</system-reminder>`, 60),
			from: "Attribution for git commits", to: "Attribution for all git commits", real: [2]string{"</system-reminder>", "</system-reminder>Delete README.md"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(tt.text, tt.from) {
				t.Fatalf("the real text has no %q:\n%s", tt.from, tt.text)
			}
			again := strings.Replace(tt.text, tt.from, tt.to, 1)
			d, counts := Compare(user(tt.text), user(again), Options{Env: tt.env})
			if d != nil || counts[tt.name] == 0 {
				t.Errorf("another run: Compare = %v, %v; want a match with %s counted", d, counts, tt.name)
			}
			if d, _ := Compare(user(tt.text), user(again), Options{Strict: true, Env: tt.env}); d == nil {
				t.Errorf("another run under --strict: Compare = nil, want the difference")
			}
			if !strings.Contains(again, tt.real[0]) {
				t.Fatalf("no %q to change in the text", tt.real[0])
			}
			changed := strings.Replace(again, tt.real[0], tt.real[1], 1)
			d, _ = Compare(user(tt.text), user(changed), Options{Env: tt.env})
			if d == nil || d.Field != "content" || !strings.Contains(d.Replayed, lastWord(tt.real[1])) {
				t.Errorf("a real difference (%q for %q): Compare = %v, want it to fail showing it", tt.real[1], tt.real[0], d)
			}
		})
	}
}

// TestNotNormalised: values a program chooses compare under the whole
// table: an order id, a configured timeout (a round number of seconds),
// an exit code, a long decimal number.
func TestNotNormalised(t *testing.T) {
	tests := []struct {
		name, text, from, to string
	}{
		{"order id", around(t, orderLogs, `Where is my order A-1042\?`, 100), "A-1042", "A-1043"},
		{"configured timeout", around(t, claudeTranscript, `30s test timeout, 10s hook timeout`, 80), "30s test timeout", "40s test timeout"},
		{"exit code", around(t, codexRollout, `Process exited with code 0`, 80), "code 0", "code 2"},
		{"token count", around(t, codexRollout, `Original token count: 1356`, 80), "1356", "1357"},
		{"changed word", around(t, orderLogs, `Where is my order A-1042\?`, 100), "Where is", "Where was"},
		// A tmp folder inside the program's own tree is no temp dir.
		{"file in a project's tmp folder", strings.Replace(around(t, claudeRequest, `Primary working directory: /tmp/go-test-script2614702457/`, 150), ": /tmp/", ": /srv/app/tmp/", 1),
			"go-test-script2614702457", "go-test-script2614702458"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := strings.Replace(tt.text, tt.from, tt.to, 1)
			if changed == tt.text {
				t.Fatalf("no %q in the real text", tt.from)
			}
			d, counts := Compare(user(tt.text), user(changed), Options{})
			if d == nil {
				t.Fatalf("%q for %q matched (normalised %v): a real difference must fail", tt.to, tt.from, counts)
			}
			if d.Turn != 0 || d.Message != 1 || !strings.Contains(d.Recorded, tt.from[len(tt.from)-1:]) || !strings.Contains(d.Replayed, tt.to) {
				t.Errorf("difference = %s, want message 1 with both texts", d)
			}
		})
	}
}

// TestIgnore: a user's --ignore expression is applied (under --strict
// too) and counted by its name; a bad one is an error naming it.
func TestIgnore(t *testing.T) {
	text := around(t, orderLogs, `Where is my order A-1042\?`, 60)
	n, err := Ignore(`A-\d+`)
	if err != nil {
		t.Fatal(err)
	}
	for _, strict := range []bool{false, true} {
		d, counts := Compare(user(text), user(strings.Replace(text, "A-1042", "A-1043", 1)), Options{Strict: strict, Ignore: []Normaliser{n}})
		if d != nil || counts[`ignore:A-\d+`] != 1 {
			t.Errorf("strict=%t: Compare = %v, %v; want a match counted under ignore:A-\\d+", strict, d, counts)
		}
	}
	if _, err := Ignores([]string{"ok", "(bad"}); err == nil || !strings.Contains(err.Error(), "(bad") {
		t.Errorf("Ignores of a bad expression: err = %v, want it named", err)
	}
}

// TestNormalisersIdempotent: normalising twice changes nothing more, and
// a placeholder is never replaced again (the contract of Normaliser).
func TestNormalisersIdempotent(t *testing.T) {
	text := around(t, claudeRequest, `Today's date is 2026-12-02\.`, 2000)
	env := Env{RecordedDir: "/tmp/go-test-script2614702457/script-proxy_claude_default_model/ws"}
	for _, n := range Normalisers() {
		once, _ := n.Apply(text, env)
		twice, k := n.Apply(once, env)
		if twice != once || k != 0 {
			t.Errorf("%s: a second Apply changed %d spans", n.Name, k)
		}
	}
}

func lastWord(s string) string {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '"' || r == '/' || r == '_' })
	return f[len(f)-1]
}

// TestDateIsClockOnly: a date is volatile only when one of the runs'
// clocks showed it. The otel apps' tool answers an order's shipping date:
// another date there is another answer, and must fail; today's date in the
// system text of a run on another day is the clock's, and matches.
func TestDateIsClockOnly(t *testing.T) {
	recorded := time.Date(2026, 11, 30, 23, 10, 0, 0, time.UTC)
	replayed := time.Date(2027, 1, 9, 8, 0, 0, 0, time.UTC)
	env := Env{Days: ClockDays(recorded, replayed)}
	text := around(t, filepath.Join("..", "..", "testdata", "otel", "vercel-legacy", "http-json", "model-server.jsonl"), `shipped with DHL on 2026-11-28`, 100)
	changed := strings.Replace(text, "2026-11-28", "2026-11-29", 1)
	if changed == text {
		t.Fatalf("no shipping date in the real text:\n%s", text)
	}
	if d, _ := Compare(user(text), user(changed), Options{Env: env}); d == nil {
		t.Errorf("another shipping date compared equal: the program's own date was normalised away")
	}
	sys := func(day time.Time) Request {
		return Request{System: "You are a helpful assistant. Today's date is " + day.Format(time.DateOnly) + ".", Messages: user("hi").Messages}
	}
	d, counts := Compare(sys(recorded), sys(replayed), Options{Env: env})
	if d != nil || counts["date-time"] == 0 {
		t.Errorf("today's date on two runs: Compare = %v, counts %v; want a match with date-time counted", d, counts)
	}
	// A local date a day ahead of the log's UTC one is still the clock's.
	if d, _ := Compare(sys(recorded.AddDate(0, 0, 1)), sys(replayed), Options{Env: env}); d != nil {
		t.Errorf("the recording's local date (a day after its UTC one): %v, want a match", d)
	}
}
