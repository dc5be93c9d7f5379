package replaymatch

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/session"
)

// benchSession is a 1,000-call agent loop as a session's events hold it
// (no request artifacts: collected, imported or agentctl run), and the
// requests the same program sends again on another day: today's date in
// the system text and each tool result's measured time differ, so every
// call runs the normalisers over its whole history.
func benchSession(calls int) ([]session.Event, []Request) {
	sys := func(day string) string { return "You read files for the user. Today is " + day + "." }
	result := func(i int, took string) string {
		return fmt.Sprintf("contents of f%d.txt (read in %s seconds)", i, took)
	}
	recorded := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	evs := []session.Event{{Seq: 1, TS: recorded, Kind: session.KindSessionStarted, Model: "gpt-4o", System: sys(recorded.Format(time.DateOnly)),
		Attrs: json.RawMessage(`{"tools":["read_file"]}`)}, {Seq: 2, Kind: session.KindUserMessage, Text: "Read every file."}}
	msgs := []session.Message{{Role: session.RoleUser, Content: "Read every file."}}
	var reqs []Request
	for i := 1; i <= calls; i++ {
		reqs = append(reqs, Request{Model: "gpt-4o", System: sys(time.Now().UTC().Format(time.DateOnly)), Tools: []string{"read_file"}, Messages: append([]session.Message(nil), msgs...)})
		id := fmt.Sprintf("call_%d", i)
		args := json.RawMessage(fmt.Sprintf(`{"path":"f%d.txt"}`, i))
		n := int64(len(evs))
		evs = append(evs,
			session.Event{Seq: n + 1, Kind: session.KindAssistantMessage, Text: fmt.Sprintf("step %d", i), ToolCalls: []session.ToolCall{{ID: id, Name: "read_file", Args: args}}},
			session.Event{Seq: n + 2, Kind: session.KindModelCall, Model: "gpt-4o-2024-08-06"},
			session.Event{Seq: n + 3, Kind: session.KindToolResult, CallID: id, Tool: "read_file", Status: session.ResultOK, Output: result(i, "0.0012")})
		msgs = append(msgs,
			session.Message{Role: session.RoleAssistant, Content: fmt.Sprintf("step %d", i), ToolCalls: []session.ToolCall{{ID: id, Name: "read_file", Args: args}}},
			session.Message{Role: session.RoleTool, ToolCallID: id, Name: "read_file", Content: result(i, "0.0031")})
	}
	return evs, reqs
}

// BenchmarkMatch1000 checks every call of a 1,000-call session (turns in
// order, as a replay asks) with the whole table, each request differing
// in its date and measured times: the matcher's CPU per call, which the
// bench row "offline replay of a 1,000-call session" reports beside the
// proxy's calls/s.
//
//	go test -run '^$' -bench BenchmarkMatch1000 ./internal/replaymatch/
func BenchmarkMatch1000(b *testing.B) {
	const calls = 1000
	evs, reqs := benchSession(calls)
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime()
	for i := 0; i < b.N; i++ {
		if i%calls == 0 {
			b.StopTimer()
			m, err := NewMatcher(NewRecording(evs), Options{})
			if err != nil {
				b.Fatal(err)
			}
			matcher = m
			b.StartTimer()
		}
		n := i%calls + 1
		if d := matcher.Check(n, reqs[n-1]); d != nil {
			b.Fatalf("call %d: %s", n, d)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
	b.ReportMetric((cpuTime()-cpu).Seconds()*1000/float64(b.N), "cpu-ms/call")
}

// cpuTime is the CPU time this process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var matcher *Matcher
