// Package benchgen generates the deterministic data sets of the
// benchmarks (bench/run, bench/history, bench/replay): sessions written as
// real logs through recorder, shaped as the runner records them, and the
// same events as JSONL for the jq references. Nothing here is random: the
// same arguments give the same bytes (timestamps count from a fixed date).
//
// Logs are written without fsync: the benchmarks that read them measure
// reading, and durable appends have their own rows.
package benchgen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
)

// Epoch is the first timestamp of every generated session.
var Epoch = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

// History writes n sessions of e events each under home (ids 1..n as 16
// hex digits; model calls, tool intents and results, assistant messages,
// spread over three models) and the same events, one JSON object a line,
// to jsonl. It is the data of the query rows: `agentctl query` reads the
// sessions once sealed, jq reads the JSONL.
func History(home, jsonl string, n, e int) error {
	st := recorder.Store{Root: home}
	f, err := os.Create(jsonl)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	models := []string{"gpt-4o-mini", "claude-sonnet-4-5", "llama-3"}
	for i := range n {
		id := fmt.Sprintf("%016x", i+1)
		ts := Epoch.Add(time.Duration(i) * time.Second)
		hdr := session.Event{TS: ts, Kind: session.KindSessionStarted, SessionID: id, Name: "bench", Provider: "p", Model: models[i%3]}
		evs := make([]session.Event, 1, e)
		evs[0] = hdr
		for j := 1; j < e-1; j++ {
			ev := session.Event{TS: ts.Add(time.Duration(j) * time.Millisecond)}
			switch j % 4 {
			case 0:
				ev.Kind, ev.Model, ev.InputTokens, ev.OutputTokens, ev.CostUSD = session.KindModelCall, models[i%3], int64(100+j), int64(j), 0.001
			case 1:
				ev.Kind, ev.CallID, ev.Tool = session.KindToolIntent, fmt.Sprint("c", j), "bash"
			case 2:
				ev.Kind, ev.CallID, ev.Tool, ev.Status, ev.LatencyMS, ev.Output = session.KindToolResult, fmt.Sprint("c", j-1), "bash", "ok", int64(j), "output of the tool"
			default:
				ev.Kind, ev.Text = session.KindAssistantMessage, "thinking about the next step"
			}
			evs = append(evs, ev)
		}
		evs = append(evs, session.Event{TS: ts.Add(time.Second), Kind: session.KindSessionFinished, Status: "done"})
		out, err := st.WriteSession(evs, recorder.Options{NoSync: true})
		if err != nil {
			return err
		}
		out[0] = hdr // the JSONL carries the header as given (seq 0)
		for _, ev := range out {
			b, err := session.Encode(ev)
			if err != nil {
				return err
			}
			w.Write(b)
			w.WriteByte('\n')
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// Replay makes a session of about n events the way the runner records
// one: per turn an assistant message with a tool call, its model_call with
// the request digest of the projection before it, an intent and a result;
// a compaction (call + event) every `every` turns (0: never), through the
// seq before the latest assistant message, as the runner compacts. It is
// the data of the replay verify rows: `replay verify` recomputes every
// digest.
func Replay(n, every int) []session.Event {
	var evs []session.Event
	ReplayEach(n, every, func(e session.Event) { evs = append(evs, e) })
	return evs
}

// ReplayEach is Replay handing each event to fn instead of returning them
// all, so a session of a million events is generated holding one (the
// data of the 1M-event read rows, written by WriteEach).
func ReplayEach(n, every int, fn func(session.Event)) {
	tools := []string{"edit_file", "grep", "list_files", "read_file"}
	attrs, _ := json.Marshal(map[string][]string{"tools": tools})
	ts := Epoch
	hdr := session.Event{Seq: 1, TS: ts, Kind: session.KindSessionStarted, SessionID: "x", Provider: "scripted", Model: "scripted-1",
		System: "You are a careful coding agent.", Attrs: attrs}
	p := session.NewProjector(hdr.System)
	p.Add(hdr)
	fn(hdr)
	count := 1
	add := func(e session.Event) {
		e.Seq, e.TS = int64(count+1), ts.Add(time.Duration(count)*time.Millisecond)
		count++
		p.Add(e)
		fn(e)
	}
	add(session.Event{Kind: session.KindUserMessage, Text: "Rename Foo to Bar in pkg/. Constraint: never edit vendor/."})
	lastAssistant := int64(0)
	for turn := 1; count < n; turn++ {
		if every > 0 && turn%every == 0 && lastAssistant > 0 {
			add(session.Event{Kind: session.KindModelCall, Provider: "scripted", Model: "scripted-1", Attrs: json.RawMessage(`{"purpose":"compaction"}`), InputTokens: 900, OutputTokens: 80})
			add(session.Event{Kind: session.KindCompaction, Through: lastAssistant - 1, Summary: fmt.Sprintf("Summary of turns up to %d: renamed Foo in %d files.", turn, turn)})
		}
		digest := session.Digest(p.Messages(), tools)
		id := fmt.Sprintf("call_%d_0", turn)
		args := json.RawMessage(fmt.Sprintf(`{"path":"pkg/f%d.go"}`, turn))
		add(session.Event{Kind: session.KindAssistantMessage, Text: fmt.Sprintf("Reading pkg/f%d.go.", turn),
			ToolCalls: []session.ToolCall{{ID: id, Name: "read_file", Args: args}}, InputTokens: 300, OutputTokens: 12})
		lastAssistant = int64(count)
		add(session.Event{Kind: session.KindModelCall, RequestDigest: digest, Provider: "scripted", Model: "scripted-1", InputTokens: 300, OutputTokens: 12, FinishReason: "tool_calls"})
		add(session.Event{Kind: session.KindToolIntent, CallID: id, Tool: "read_file", Args: args})
		add(session.Event{Kind: session.KindToolResult, CallID: id, Tool: "read_file", Status: "ok",
			Output: "package pkg\n\n// File uses Foo.\nfunc use() { _ = Foo{} }\n" + strings.Repeat("// filler line of a realistic file\n", 4)})
	}
}

// CollectedEach hands fn a session of about n events as `agentctl
// collect` records an app that sends only its newest messages: every turn
// the app's earlier messages are gone from its request, so each turn is a
// compaction (recorded by otlp: no source_seqs), the user's message, the
// answer and its model call. One compaction every 4 events, each with no
// through (otelsession records none), is the shape
// that made view and diagnose quadratic in compactions (issue 38).
func CollectedEach(n int, fn func(session.Event)) {
	ts := Epoch
	count := 0
	add := func(e session.Event) {
		e.Seq, e.TS = int64(count+1), ts.Add(time.Duration(count)*time.Millisecond)
		count++
		fn(e)
	}
	add(session.Event{Kind: session.KindSessionStarted, SessionID: "x", Provider: "openai", Model: "gpt-4o-mini",
		Attrs: json.RawMessage(`{"source":"otlp"}`)})
	for turn := 1; count < n; turn++ {
		if turn > 1 {
			// As otelsession maps it: no through (the app said nothing of
			// what it dropped), the new request's text as the summary.
			add(session.Event{Kind: session.KindCompaction, Summary: fmt.Sprintf("Where is order %d? The customer asked twice.", turn),
				Attrs: json.RawMessage(`{"recorded_by":"otlp","kept_messages":0,"replaced_messages":2,"new_messages":1}`)})
		}
		add(session.Event{Kind: session.KindUserMessage, Text: fmt.Sprintf("Where is order %d? The customer asked twice.", turn)})
		add(session.Event{Kind: session.KindAssistantMessage, Text: fmt.Sprintf("Order %d shipped yesterday and arrives on Friday.", turn)})
		add(session.Event{Kind: session.KindModelCall, Provider: "openai", Model: "gpt-4o-mini", InputTokens: 40, OutputTokens: 14, FinishReason: "stop"})
	}
}

// WriteEach writes the events gen hands out (ReplayEach, CollectedEach)
// as the log of session id in st, a batch of appends at a time, with no
// lease left behind, as a finished run leaves it.
func WriteEach(st recorder.Store, id string, gen func(fn func(session.Event))) error {
	var sess *recorder.Session
	var batch []session.Event
	var err error
	flush := func() {
		if err == nil && len(batch) > 0 {
			_, err = sess.Append(batch...)
		}
		batch = batch[:0]
	}
	gen(func(e session.Event) {
		if err != nil {
			return
		}
		if sess == nil {
			e.SessionID = id
			sess, err = st.Create(e, recorder.Options{NoSync: true})
			return
		}
		if batch = append(batch, e); len(batch) == 4096 {
			flush()
		}
	})
	if sess == nil {
		return err
	}
	flush()
	if cerr := sess.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(st.SessionDir(id), recorder.LeaseFile)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// WriteLog writes evs (from Replay) as the log of session id in st, with
// no lease left behind, as a finished run leaves it.
func WriteLog(st recorder.Store, id string, evs []session.Event) error {
	evs = append([]session.Event(nil), evs...)
	evs[0].SessionID = id
	if _, err := st.WriteSession(evs, recorder.Options{NoSync: true}); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(st.SessionDir(id), recorder.LeaseFile)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
