package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/recorder"
)

// The benchmarks measure what the proxy adds to a model call on loopback.
// BenchmarkProxyDirect is the reference: the client calls the upstream (a
// loopback server streaming a corpus answer) itself. BenchmarkProxyAdded
// is the same calls through the proxy in record mode, each recorded into a
// real session log (fsync'd) with its artifacts. Both report the median
// call time (median-ms) and the median time to the first streamed byte
// (ttfb-ms); the added latency is the difference of the two medians.
// BenchmarkProxyReplay serves a 1,000-call recorded session offline,
// recording the replay too, and reports calls/s.
//
//	go test -run '^$' -bench 'BenchmarkProxy' -benchtime 2000x ./internal/proxy/

// benchConvLen is how many calls one conversation of the added/direct
// benchmarks has before the next starts: requests grow as an agent's do.
const benchConvLen = 20

// benchBodies are the requests of one conversation: each extends the
// history with the previous answer and a new user message.
func benchBodies(answer string) []string {
	var msgs []any
	var out []string
	for i := 0; i < benchConvLen; i++ {
		msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("question %d: what is the weather like?", i)})
		out = append(out, string(marshal(map[string]any{"model": "gpt-4o", "stream": true, "messages": msgs})))
		msgs = append(msgs, map[string]any{"role": "assistant", "content": answer})
	}
	return out
}

// timedCall posts body and returns the time to the first byte and to the
// last.
func timedCall(b *testing.B, cl *http.Client, url, body string) (time.Duration, time.Duration) {
	start := time.Now()
	resp, err := cl.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	one := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, one); err != nil {
		b.Fatal(err)
	}
	ttfb := time.Since(start)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("status %d", resp.StatusCode)
	}
	return ttfb, time.Since(start)
}

func median(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return float64(d[len(d)/2].Microseconds()) / 1000
}

func benchUpstream(b *testing.B) *upstream {
	body := corpusFile(b, oaDir+"e2aad469b71d1d4894ff833ea147020a9d875eb7ce644a0ff355581690a4cbfd.bin")
	return newUpstream(b, reply{200, sse, body, false})
}

// corpusAnswer is the text of the corpus answer the upstream streams.
func corpusAnswer(b *testing.B) string {
	body := corpusFile(b, oaDir+"e2aad469b71d1d4894ff833ea147020a9d875eb7ce644a0ff355581690a4cbfd.bin")
	var text strings.Builder
	for _, line := range strings.Split(string(body), "\n") {
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok && jsonUnmarshal(d, &chunk) == nil {
			for _, c := range chunk.Choices {
				text.WriteString(c.Delta.Content)
			}
		}
	}
	return text.String()
}

func runCalls(b *testing.B, url func(conv int) string, bodies []string) {
	cl := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	ttfb := make([]time.Duration, 0, b.N)
	total := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, t := timedCall(b, cl, url(i/benchConvLen), bodies[i%benchConvLen])
		ttfb, total = append(ttfb, f), append(total, t)
	}
	b.StopTimer()
	b.ReportMetric(median(total), "median-ms")
	b.ReportMetric(median(ttfb), "ttfb-ms")
}

func BenchmarkProxyDirect(b *testing.B) {
	up := benchUpstream(b)
	bodies := benchBodies(corpusAnswer(b))
	runCalls(b, func(int) string { return up.URL + "/v1/chat/completions" }, bodies)
}

func BenchmarkProxyAdded(b *testing.B) {
	up := benchUpstream(b)
	bodies := benchBodies(corpusAnswer(b))
	ub, err := NewUpstream(up.URL, nil)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := New(Config{Backend: ub, Open: StoreSessions{Store: recorder.Store{Root: b.TempDir()}}.Open})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close()
	runCalls(b, func(conv int) string { return fmt.Sprintf("%s/s/bench-%d/v1/chat/completions", hs.URL, conv) }, bodies)
	b.StopTimer()
	waitIdle(b, srv)
	if got, want := len(srv.Sessions()), (b.N+benchConvLen-1)/benchConvLen; got != want {
		b.Fatalf("recorded %d sessions, want %d", got, want)
	}
}

// BenchmarkProxyReplay records a 1,000-call agent loop (the scripted
// model, each call answering the previous tool result), then serves it
// offline again and again, each pass recorded as a new session; each call
// goes through the one matcher (replaymatch) with every normaliser of the
// table registered.
func BenchmarkProxyReplay(b *testing.B) { benchReplay(b, recorder.Options{}, false) }

// BenchmarkProxyReplayVolatile is BenchmarkProxyReplay with the program
// run again on another day, its tool taking other times: today's date in
// its system text and the measured time in every tool result differ, so
// no request is the recorded bytes (each is parsed) and the normalisers
// work on the whole history of every call.
func BenchmarkProxyReplayVolatile(b *testing.B) { benchReplay(b, recorder.Options{}, true) }

// BenchmarkProxyReplayNoSync is BenchmarkProxyReplay with the replay's own
// recording not fsync'd (the log's NoSync; the artifact file is still
// synced): what the fsync of each call's log append costs.
func BenchmarkProxyReplayNoSync(b *testing.B) { benchReplay(b, recorder.Options{NoSync: true}, false) }

func benchReplay(b *testing.B, opts recorder.Options, volatile bool) {
	const calls = 1000
	var turns strings.Builder
	turns.WriteString("turns:\n")
	for i := 1; i <= calls; i++ {
		fmt.Fprintf(&turns, "  - text: \"step %d\"\n    tool_calls:\n      - {name: read_file, args: {path: f%d.txt}}\n", i, i)
	}
	loop := func(day, took string) []string {
		bodies := make([]string, calls)
		var msgs []any
		msgs = append(msgs, map[string]any{"role": "system", "content": "You read files for the user. Today is " + day + "."},
			map[string]any{"role": "user", "content": "Read every file."})
		for i := 1; i <= calls; i++ {
			bodies[i-1] = string(marshal(map[string]any{"model": "gpt-4o", "stream": true, "messages": msgs,
				"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "read_file"}}}}))
			id := fmt.Sprintf("call_%d_0", i)
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": fmt.Sprintf("step %d", i), "tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "read_file", "arguments": fmt.Sprintf(`{"path":"f%d.txt"}`, i)}}}},
				map[string]any{"role": "tool", "tool_call_id": id, "content": fmt.Sprintf("contents of f%d (read in %s seconds)", i, took)})
		}
		return bodies
	}
	recorded, bodies := loop(day(0), "0.0012"), []string(nil)
	if volatile {
		bodies = loop(day(1), "0.0031")
	} else {
		bodies = recorded
	}
	recSrv, mem, base := startProxy(b, Config{Backend: NewScripted(loadScript(b, turns.String()), "")})
	cl := &http.Client{}
	for _, body := range recorded {
		resp, err := cl.Post(base+"/s/rec/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	waitIdle(b, recSrv)
	rec := mem.Get("rec")
	r, err := NewReplay(ReplayConfig{Events: rec.Events(), Artifacts: rec.ReadArtifact})
	if err != nil || r.Turns() != calls {
		b.Fatalf("replay of %d turns: %v", r.Turns(), err)
	}
	srv, err := New(Config{Backend: r, Open: StoreSessions{Store: recorder.Store{Root: b.TempDir()}, Options: opts}.Open})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		resp, err := cl.Post(fmt.Sprintf("%s/s/replay-%d/v1/chat/completions", hs.URL, i/calls), "application/json", strings.NewReader(bodies[i%calls]))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("call %d: status %d", i, resp.StatusCode)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
	b.StopTimer()
	if r.Diverged() {
		b.Fatalf("replay diverged: %+v", r.Findings()[0])
	}
	if n := r.Normalised(); volatile && (len(n) != min(b.N, 2) || n[0].Name != "date-time" || b.N > 1 && n[1].Name != "duration") {
		b.Fatalf("normalised %+v, want the date and the durations", n)
	}
}
