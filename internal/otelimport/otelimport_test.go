package otelimport

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/otelsession"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/remote"
	"github.com/agentctl/agentctl/internal/remote/weedtest"
	"github.com/agentctl/agentctl/internal/session"
)

const captures = "../../testdata/otel"

var emitters = []string{"otel-openai", "openinference", "openllmetry", "vercel-genai", "vercel-legacy"}

// capture returns the bodies of one emitter's protocol, by signal, in
// arrival order.
func capture(t *testing.T, em, proto string) (traces, logs [][]byte) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(captures, em, proto, "[0-9]*-*"))
	sort.Strings(names)
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(n, ".json") {
			var c bytes.Buffer
			if err := json.Compact(&c, b); err != nil {
				t.Fatal(err)
			}
			b = c.Bytes()
		}
		if strings.Contains(n, "-logs") {
			logs = append(logs, b)
		} else {
			traces = append(traces, b)
		}
	}
	return traces, logs
}

// layouts writes each emitter's capture into files as the Collector
// writes them: the file exporter's JSON lines (traces.jsonl, logs.jsonl),
// its length-prefixed protobuf (traces.pb, logs.pb), and the S3
// exporter's partitioned objects (one message each, .binpb, and gzipped
// .json.gz). Each emitter goes to one layout, named in the returned map.
func layouts(t *testing.T, dir string) map[string]string {
	t.Helper()
	write := func(p string, b []byte) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lines := func(ms [][]byte) []byte { return append(bytes.Join(ms, []byte("\n")), '\n') }
	framed := func(ms [][]byte) []byte {
		var b []byte
		for _, m := range ms {
			b = binary.BigEndian.AppendUint32(b, uint32(len(m)))
			b = append(b, m...)
		}
		return b
	}
	gz := func(b []byte) []byte {
		var out bytes.Buffer
		z := gzip.NewWriter(&out)
		z.Write(b)
		z.Close()
		return out.Bytes()
	}
	part := "year=2026/month=12/day=03/hour=20/minute=01"
	got := map[string]string{}
	for i, em := range emitters {
		switch i % 4 {
		case 0: // file exporter, format: json
			tr, lg := capture(t, em, "http-json")
			write(filepath.Join(dir, "file-json", em, "traces.jsonl"), lines(tr))
			if lg != nil {
				write(filepath.Join(dir, "file-json", em, "logs.jsonl"), lines(lg))
			}
			got[em] = "file exporter json"
		case 1: // file exporter, format: proto
			tr, lg := capture(t, em, "http-protobuf")
			write(filepath.Join(dir, "file-proto", em, "traces.pb"), framed(tr))
			if lg != nil {
				write(filepath.Join(dir, "file-proto", em, "logs.pb"), framed(lg))
			}
			got[em] = "file exporter proto"
		case 2: // S3 exporter, marshaler otlp_proto
			tr, _ := capture(t, em, "grpc")
			for j, m := range tr {
				write(filepath.Join(dir, "s3", em, part, "traces_"+string(rune('a'+j))+"x1y2z3.binpb"), m)
			}
			got[em] = "s3 exporter proto"
		case 3: // S3 exporter, marshaler otlp_json, compression gzip
			tr, _ := capture(t, em, "http-json")
			for j, m := range tr {
				write(filepath.Join(dir, "s3", em, part, "traces_"+string(rune('a'+j))+"x1y2z3.json.gz"), gz(m))
			}
			got[em] = "s3 exporter json gzip"
		}
	}
	// A metrics file of the S3 layout is skipped, not an error.
	write(filepath.Join(dir, "s3", part, "metrics_x.json"), []byte(`{"resourceMetrics":[]}`+"\n"))
	return got
}

// checkSessions holds each emitter's imported session to what its model
// server saw: the same answers, tokens and tool results.
func checkSessions(t *testing.T, st recorder.Store) {
	t.Helper()
	ids, err := st.IDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != len(emitters) {
		t.Fatalf("%d sessions, want %d", len(ids), len(emitters))
	}
	var got []string
	for _, id := range ids {
		evs, _, err := st.Load(id)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, digest(evs))
	}
	var want []string
	for _, em := range emitters {
		b, err := os.ReadFile(filepath.Join(captures, em, "http-json", "model-server.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var evs []session.Event
		for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var e session.Event
			json.Unmarshal(l, &e)
			evs = append(evs, e)
		}
		want = append(want, digest(evs))
	}
	sort.Strings(got)
	sort.Strings(want)
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("session %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

// digest summarizes a conversation: answers, tokens, tool results.
func digest(evs []session.Event) string {
	var b strings.Builder
	for _, e := range evs {
		switch e.Kind {
		case session.KindAssistantMessage:
			tc, _ := json.Marshal(e.ToolCalls)
			b.WriteString("A:" + e.Text + string(tc) + ";")
		case session.KindModelCall:
			b.WriteString("M:" + e.Model + ":" + itoa(e.InputTokens) + "/" + itoa(e.OutputTokens) + ";")
		case session.KindToolResult:
			b.WriteString("R:" + e.CallID + ":" + e.Output + ";")
		}
	}
	return b.String()
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func opts() Options {
	return Options{Mapping: otelsession.Options{Recorder: recorder.Options{NoSync: true}}}
}

// TestImportTree imports the Collector's file layouts from a folder, then
// again (nothing read, nothing written), then after a new file arrives
// (only that file read).
func TestImportTree(t *testing.T) {
	dir := t.TempDir()
	layouts(t, dir)
	st := recorder.Store{Root: t.TempDir()}
	rep, err := Import(context.Background(), st, dir, opts())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Incomplete() {
		t.Fatalf("incomplete: %+v", rep.Files)
	}
	if len(rep.Sessions) != len(emitters) {
		t.Fatalf("sessions %v, want %d", rep.Sessions, len(emitters))
	}
	checkSessions(t, st)
	before := snapshot(t, st)

	rep, err = Import(context.Background(), st, dir, opts())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Skipped != len(rep.Files)+rep.Skipped || len(rep.Sessions) != 0 || len(rep.Files) != 0 {
		t.Fatalf("second import read %+v, wrote %v; want nothing", rep.Files, rep.Sessions)
	}
	if after := snapshot(t, st); after != before {
		t.Fatalf("the second import changed the sessions")
	}

	// A file the exporter wrote since (the same spans again, under a new
	// name, as a retried upload would be): read, and nothing added.
	tr, _ := capture(t, "vercel-genai", "http-json") // the run the S3 layout holds
	os.WriteFile(filepath.Join(dir, "traces-retry.json"), tr[0], 0o644)
	rep, err = Import(context.Background(), st, dir, opts())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Files) != 1 || rep.Files[0].Accepted == 0 || len(rep.Sessions) != 0 {
		t.Fatalf("third import: files %+v sessions %v; want the new file read, nothing written", rep.Files, rep.Sessions)
	}
	if after := snapshot(t, st); after != before {
		t.Fatalf("a retried upload changed the sessions")
	}
}

func snapshot(t *testing.T, st recorder.Store) string {
	t.Helper()
	ids, _ := st.IDs()
	var b strings.Builder
	for _, id := range ids {
		raw, err := os.ReadFile(st.LogPath(id))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(raw)
	}
	return b.String()
}

// TestImportMalformed: files that are not OTLP are named with why, and
// the rest is imported.
func TestImportMalformed(t *testing.T) {
	dir := t.TempDir()
	tr, _ := capture(t, "vercel-genai", "http-json")
	os.WriteFile(filepath.Join(dir, "a-traces.json"), tr[0], 0o644)
	os.WriteFile(filepath.Join(dir, "b-traces.json"), []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz"}]}]}]}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "c.pb"), []byte("\x0a\xff\xff\xff\xff\x0f garbage"), 0o644)
	os.WriteFile(filepath.Join(dir, "d-traces.json.gz"), []byte("\x1f\x8bnot gzip"), 0o644)
	st := recorder.Store{Root: t.TempDir()}
	rep, err := Import(context.Background(), st, dir, opts())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"b-traces.json": `line 1: otlp json traces: traceId "xyz" is not hex`, "c.pb": "neither OTLP protobuf traces nor logs", "d-traces.json.gz": "gzip"}
	for _, f := range rep.Files {
		base := filepath.Base(f.Name)
		if w, ok := want[base]; ok {
			if !strings.Contains(f.Error, w) {
				t.Errorf("%s: error %q, want %q", base, f.Error, w)
			}
			delete(want, base)
		} else if f.Error != "" || f.Accepted == 0 {
			t.Errorf("%s: %+v, want it imported", base, f)
		}
	}
	if len(want) != 0 {
		t.Errorf("not reported: %v", want)
	}
	if len(rep.Sessions) != 1 || !rep.Incomplete() {
		t.Errorf("sessions %v incomplete %v; want one session, incomplete", rep.Sessions, rep.Incomplete())
	}
	// The files that failed are read again next time; the good one not.
	rep, _ = Import(context.Background(), st, dir, opts())
	if rep.Skipped != 1 || len(rep.Files) != 3 {
		t.Errorf("again: skipped %d, files %d; want 1 and 3", rep.Skipped, len(rep.Files))
	}
}

// TestImportSeaweedFS imports the S3 exporter's layout from a real S3
// server (SeaweedFS), then again: the second reads no object.
func TestImportSeaweedFS(t *testing.T) {
	srv := weedtest.Start(t)
	url := srv.Bucket(t, "otel", "collector/")
	store, err := srv.Client(url)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	layouts(t, dir)
	ctx := context.Background()
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, _ := os.ReadFile(p)
		_, err = store.Put(ctx, filepath.ToSlash(rel), b, remote.Cond{})
		return err
	})
	st := recorder.Store{Root: t.TempDir()}
	o := opts()
	o.Store = func(ctx context.Context, u string) (remote.Store, error) { return srv.Client(u) }
	rep, err := Import(ctx, st, url, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Incomplete() || len(rep.Sessions) != len(emitters) {
		t.Fatalf("files %+v sessions %v", rep.Files, rep.Sessions)
	}
	checkSessions(t, st)
	rep, err = Import(ctx, st, url, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Files) != 0 || rep.Skipped == 0 || len(rep.Sessions) != 0 {
		t.Fatalf("second import: files %+v skipped %d sessions %v; want nothing read", rep.Files, rep.Skipped, rep.Sessions)
	}
}

// TestImportDecodeBounded: a file of a million empty messages (70 KiB
// gzipped, 130 MB and more decoded), protobuf or JSON, is reported with
// an error before it is decoded, and the heap does not grow by more than
// the limit meanwhile; the good file beside it is imported.
func TestImportDecodeBounded(t *testing.T) {
	const n = 1 << 20
	dir := t.TempDir()
	var empty []byte
	for range n {
		empty = append(empty, 0x0a, 0x00) // resource_spans {}
	}
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(empty)
	zw.Close()
	os.WriteFile(filepath.Join(dir, "bomb-traces.pb.gz"), zb.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, "bomb.pb"), empty, 0o644)
	os.WriteFile(filepath.Join(dir, "bomb-logs.json"), []byte(`{"resourceLogs":[`+strings.TrimSuffix(strings.Repeat("{},", n/2), ",")+"]}\n"), 0o644)
	tr, _ := capture(t, "vercel-genai", "http-json")
	os.WriteFile(filepath.Join(dir, "good-traces.json"), tr[0], 0o644)
	const limit = 32 << 20
	o := opts()
	o.MaxDecodedBytes = limit
	var rep *Report
	var err error
	var before, peak runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.HeapAlloc {
				peak = m
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	rep, err = Import(context.Background(), recorder.Store{Root: t.TempDir()}, dir, o)
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if grew := int64(peak.HeapAlloc) - int64(before.HeapAlloc); grew > limit {
		t.Errorf("the heap grew by %d MiB, over the %d MiB limit", grew>>20, limit>>20)
	}
	for _, f := range rep.Files {
		base := filepath.Base(f.Name)
		switch {
		case strings.HasPrefix(base, "bomb"):
			if !strings.Contains(f.Error, "decoded") {
				t.Errorf("%s: error %q, want it refused for what it would take decoded", base, f.Error)
			}
		case f.Error != "" || f.Accepted == 0:
			t.Errorf("%s: %+v, want it imported", base, f)
		}
	}
	if len(rep.Files) != 4 {
		t.Errorf("%d files reported, want 4", len(rep.Files))
	}
}
