package collect

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/recorder/otlp/jaegertest"
)

// A forward reaches a real collector (Jaeger) with every span, from HTTP
// (gzip, the bytes as sent) and gRPC exports.
func TestForwardToJaeger(t *testing.T) {
	j := jaegertest.Start(t)
	fw, err := NewForwarder(ForwardConfig{URL: "http://" + j.HTTP})
	if err != nil {
		t.Fatal(err)
	}
	mem := &Memory{}
	httpAddr, grpcAddr := start(t, newServer(t, Config{Sink: mem, Forward: fw}))
	exps := exporters(t, httpAddr, grpcAddr, nil)
	seeds := map[string]byte{"http/protobuf": 0x31, "http/protobuf+gzip": 0x32, "http/json": 0x33, "grpc": 0x34, "grpc+gzip": 0x35}
	for name, exp := range exps {
		if err := exp.ExportSpans(context.Background(), stubs(seeds[name], 20).Snapshots()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for name, seed := range seeds {
		id := stubs(seed, 1)[0].SpanContext.TraceID().String()
		spans := j.WaitTrace(t, id, 20)
		if len(spans) != 20 {
			t.Errorf("%s: Jaeger has %d spans of trace %s, want 20", name, len(spans), id)
		}
		for _, sp := range spans {
			if sp.Tags["gen_ai.operation.name"] != "chat" || sp.Service != "collect-test" {
				t.Errorf("%s: forwarded span %s lost its attributes: %v %q", name, sp.SpanID, sp.Tags, sp.Service)
				break
			}
		}
	}
	if err := fw.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := fw.Stats(); st.Sent != 5 || st.Dropped != 0 || st.Failed != 0 {
		t.Errorf("forward stats = %+v, want 5 sent", st)
	}
}

// The forward carries the request as it came: same bytes, same Content-
// Type and Content-Encoding.
func TestForwardSameBytes(t *testing.T) {
	type got struct {
		path, ct, enc string
		body          []byte
	}
	var mu sync.Mutex
	var seen []got
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, got{r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Content-Encoding"), b})
		mu.Unlock()
	}))
	defer target.Close()
	fw, err := NewForwarder(ForwardConfig{URL: target.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	httpAddr, _ := start(t, newServer(t, Config{Sink: &Memory{}, Forward: fw}))
	body := gz(exportBody(t, stubs(40, 5)))
	if resp, out := post(t, "http://"+httpAddr+"/v1/traces", ctProtobuf, "gzip", body, nil); resp.StatusCode != 200 {
		t.Fatalf("%s %s", resp.Status, out)
	}
	logsBody := []byte(`{"resourceLogs":[]}`)
	if resp, out := post(t, "http://"+httpAddr+"/v1/logs", "application/json; charset=utf-8", "", logsBody, nil); resp.StatusCode != 200 {
		t.Fatalf("%s %s", resp.Status, out)
	}
	fw.Close(context.Background())
	want := []got{{"/v1/traces", ctProtobuf, "gzip", body}, {"/v1/logs", ctJSON, "", logsBody}}
	if len(seen) != len(want) {
		t.Fatalf("forwarded %d requests, want %d", len(seen), len(want))
	}
	for _, w := range want {
		found := false
		for _, g := range seen {
			if g.path == w.path && g.ct == w.ct && g.enc == w.enc && bytes.Equal(g.body, w.body) {
				found = true
			}
		}
		if !found {
			t.Errorf("no forward of %s %s %q with the same %d bytes (got %+v)", w.path, w.ct, w.enc, len(w.body), seen)
		}
	}
}

// A forward target that is down costs the exporter nothing: every
// export is acknowledged as fast, the failure is logged once and
// counted.
func TestForwardTargetDown(t *testing.T) {
	var mu sync.Mutex
	var logged []string
	fw, err := NewForwarder(ForwardConfig{URL: "http://127.0.0.1:1", Timeout: time.Second, Logf: func(f string, a ...any) {
		mu.Lock()
		logged = append(logged, f)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	mem := &Memory{}
	httpAddr, _ := start(t, newServer(t, Config{Sink: mem, Forward: fw}))
	body := exportBody(t, stubs(50, 3))
	for range 10 {
		t0 := time.Now()
		resp, out := post(t, "http://"+httpAddr+"/v1/traces", ctProtobuf, "", body, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s", resp.Status, out)
		}
		if d := time.Since(t0); d > 500*time.Millisecond {
			t.Errorf("export took %v with the forward target down: the forward must not hold the ack", d)
		}
	}
	fw.Close(context.Background())
	st := fw.Stats()
	if st.Failed+st.Dropped != 10 || st.Sent != 0 {
		t.Errorf("forward stats = %+v, want 10 failed or dropped", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logged) != 1 || !strings.Contains(logged[0], "failing") {
		t.Errorf("logged %q, want one line saying the forward is failing", logged)
	}
	if len(mem.Spans()) != 3 {
		t.Errorf("collected %d spans, want 3", len(mem.Spans()))
	}
}

// The queue is bounded in bytes: what does not fit is dropped, counted.
func TestForwardQueueBounded(t *testing.T) {
	block := make(chan struct{})
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer target.Close()
	defer close(block)
	fw, err := NewForwarder(ForwardConfig{URL: target.URL, MaxQueueBytes: 10 << 10, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	queued := 0
	for range 20 {
		if fw.Enqueue(traces, ctProtobuf, "", make([]byte, 1<<10)) {
			queued++
		}
	}
	// One may be taken by the worker (and held by the target), ten fit.
	if queued < 10 || queued > 11 || fw.Stats().Dropped != int64(20-queued) {
		t.Errorf("queued %d of 20 1-KiB exports into a 10-KiB queue, dropped %d", queued, fw.Stats().Dropped)
	}
	if fw.Stats().Queued > 10<<10 {
		t.Errorf("queued bytes %d over the bound", fw.Stats().Queued)
	}
}

func TestForwardURL(t *testing.T) {
	for _, u := range []string{"", "localhost:4318", "ftp://x", "http://"} {
		if _, err := NewForwarder(ForwardConfig{URL: u}); err == nil || !strings.Contains(err.Error(), "OTLP/HTTP") {
			t.Errorf("NewForwarder(%q) = %v, want an error naming what is wanted", u, err)
		}
	}
}

// The forward URL's password is in no message and no count, and a
// redirect to another host is refused (the exports, the URL's
// credentials and the headers would go there).
func TestForwardCredentialsStayHome(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer target.Close()
	var mu sync.Mutex
	var logged []string
	u := strings.Replace(target.URL, "http://", "http://otlp:hunter2secret@", 1)
	fw, err := NewForwarder(ForwardConfig{URL: u, Logf: func(f string, a ...any) {
		mu.Lock()
		logged = append(logged, fmt.Sprintf(f, a...))
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	fw.Enqueue(traces, ctProtobuf, "", []byte("x"))
	cerr := fw.Close(context.Background())
	st := fw.Stats()
	if n := elsewhere.Load(); n != 0 || st.Failed != 1 {
		t.Errorf("a redirect to another host: %d requests reached it, stats %+v; want none, 1 failed", n, st)
	}
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(append(logged, st.URL, fmt.Sprint(cerr)), "\n")
	if strings.Contains(all, "hunter2secret") || !strings.Contains(all, "another host") || !strings.Contains(st.URL, "otlp:xxxxx@") {
		t.Errorf("messages and stats %q: want the password masked and the refused redirect named", all)
	}
	if _, err := NewForwarder(ForwardConfig{URL: "ftp://otlp:hunter2secret@h"}); err == nil || strings.Contains(err.Error(), "hunter2secret") {
		t.Errorf("NewForwarder with a bad URL: %v, want an error without the password", err)
	}
}
