package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/testenv/logcheck"
)

// collector is `agentctl collect` running as its own process (the test
// binary as agentctl, with main's signal handling).
type collector struct {
	cmd        *exec.Cmd
	http, grpc string
	out        *bufio.Reader
	stderr     *syncBuffer
	exited     chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startCollector(t *testing.T, home string, args ...string) *collector {
	t.Helper()
	full := append([]string{"--home", home, "collect", "--json", "--listen", "127.0.0.1:0", "--grpc", "127.0.0.1:0"}, args...)
	cmd := exec.Command("agentctl", full...)
	c := &collector{cmd: cmd, stderr: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = c.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.out = bufio.NewReader(stdout)
	line, err := c.out.ReadBytes('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("agentctl %s: no listening line: %v\nstderr: %s", strings.Join(full, " "), err, c.stderr.String())
	}
	var l struct{ Kind, HTTP, GRPC string }
	if err := json.Unmarshal(line, &l); err != nil || l.Kind != "listening" {
		t.Fatalf("first line %q: %v", line, err)
	}
	c.http, c.grpc = "http://"+l.HTTP, l.GRPC
	go func() { c.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-c.exited
	})
	return c
}

// stop sends SIGTERM and returns the summary line; collect must exit 0.
func (c *collector) stop(t *testing.T) map[string]any {
	t.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	rest, _ := io.ReadAll(c.out)
	select {
	case err := <-c.exited:
		c.exited <- err
		if err != nil {
			t.Fatalf("agentctl collect after SIGTERM: %v\nstderr: %s", err, c.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("agentctl collect did not exit 60s after SIGTERM\nstderr: %s", c.stderr.String())
	}
	var sum map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(rest), &sum); err != nil || sum["kind"] != "finished" {
		t.Fatalf("summary %q: %v", rest, err)
	}
	return sum
}

func kv(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// conversation is one trace of n GenAI chat spans, each call's input the
// previous turns plus one, as an instrumented app exports them (OTel
// GenAI conventions, content on the span).
func conversation(seed uint64, n int) *coltracepb.ExportTraceServiceRequest {
	tid := make([]byte, 16)
	binary.BigEndian.PutUint64(tid, 0xc011ec7)
	binary.BigEndian.PutUint64(tid[8:], seed)
	t0 := uint64(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC).UnixNano()) + seed*uint64(time.Minute)
	var spans []*tracepb.Span
	var msgs []string
	for i := range n {
		sid := make([]byte, 8)
		binary.BigEndian.PutUint64(sid, seed<<16|uint64(i)+1)
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","parts":[{"type":"text","content":"question %d of conversation %d"}]}`, i, seed))
		in := "[" + strings.Join(msgs, ",") + "]"
		answer := fmt.Sprintf(`{"role":"assistant","parts":[{"type":"text","content":"answer %d of conversation %d"}],"finish_reason":"stop"}`, i, seed)
		msgs = append(msgs, answer)
		start := t0 + uint64(i)*uint64(time.Second)
		spans = append(spans, &tracepb.Span{TraceId: tid, SpanId: sid, Name: "chat gpt-4o-mini", Kind: tracepb.Span_SPAN_KIND_CLIENT,
			StartTimeUnixNano: start, EndTimeUnixNano: start + uint64(300*time.Millisecond),
			Attributes: []*commonpb.KeyValue{kv("gen_ai.operation.name", "chat"), kv("gen_ai.provider.name", "openai"),
				kv("gen_ai.request.model", "gpt-4o-mini"), kv("gen_ai.input.messages", in), kv("gen_ai.output.messages", "["+answer+"]")}})
	}
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", "collect-test")}},
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "collect-test"}, Spans: spans}}}}}
}

func spanKeys(req *coltracepb.ExportTraceServiceRequest) []string {
	var out []string
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				out = append(out, hex.EncodeToString(sp.TraceId)+"/"+hex.EncodeToString(sp.SpanId))
			}
		}
	}
	return out
}

// postTraces sends req as OTLP/HTTP protobuf and returns the status (0
// when the request did not get an answer).
func postTraces(url string, req *coltracepb.ExportTraceServiceRequest) (int, error) {
	b, err := proto.Marshal(req)
	if err != nil {
		return 0, err
	}
	resp, err := http.Post(url+"/v1/traces", "application/x-protobuf", bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// modelCalls counts, per "trace/span", the model_call events of every
// session in home that came from that span.
func modelCalls(t *testing.T, home string) map[string]int {
	t.Helper()
	st := recorder.Store{Root: home}
	ids, err := st.IDs()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, id := range ids {
		evs, _, err := st.Load(id)
		if err != nil {
			t.Fatalf("load %s: %v", id, err)
		}
		for _, e := range evs {
			if e.Kind != session.KindModelCall {
				continue
			}
			var a struct {
				TraceID string `json:"trace_id"`
				SpanID  string `json:"span_id"`
			}
			json.Unmarshal(e.Attrs, &a)
			out[a.TraceID+"/"+a.SpanID]++
		}
	}
	return out
}

// Killed with SIGKILL mid-stream: every span acknowledged before the
// kill is in a session after a restart; the export that was in flight
// (unacknowledged), retried by its exporter against the restarted
// collector, lands once; a retry of acknowledged exports adds nothing.
func TestCollectKill9(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	c := startCollector(t, home)
	var (
		mu      sync.Mutex
		acked   []*coltracepb.ExportTraceServiceRequest
		unacked []*coltracepb.ExportTraceServiceRequest
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(0); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req := conversation(uint64(w)<<20|i+1, 5)
				code, err := postTraces(c.http, req)
				mu.Lock()
				if err == nil && code == 200 {
					acked = append(acked, req)
				} else {
					unacked = append(unacked, req)
				}
				mu.Unlock()
				if err != nil {
					return // the collector is gone
				}
			}
		}()
	}
	// Let some exports be acknowledged, then kill it mid-stream.
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 30 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.cmd.Process.Signal(syscall.SIGKILL)
	wg.Wait()
	close(stop)
	if len(acked) == 0 {
		t.Fatalf("no export acknowledged before the kill; stderr: %s", c.stderr.String())
	}
	t.Logf("%d exports acknowledged, %d unanswered at the kill", len(acked), len(unacked))

	// Restarted on the same home: the exporters retry what was not
	// answered, and (as an exporter whose ack was lost would) what was.
	c = startCollector(t, home)
	for _, req := range append(append([]*coltracepb.ExportTraceServiceRequest(nil), unacked...), acked...) {
		if code, err := postTraces(c.http, req); err != nil || code != 200 {
			t.Fatalf("retry after restart: %d %v", code, err)
		}
	}
	c.stop(t)

	got := modelCalls(t, home)
	for _, req := range append(acked, unacked...) {
		for _, k := range spanKeys(req) {
			if got[k] != 1 {
				t.Errorf("span %s: %d model_call events, want 1", k, got[k])
			}
		}
	}
	if err := logcheck.Home(recorder.Store{Root: home}); err != nil {
		t.Error(err)
	}
}

// Exports in any order and twice: a conversation's calls are one session
// in conversation order, each once; the SDK-less protobuf client stands
// for a retrying exporter.
func TestCollectDuplicateOutOfOrder(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	c := startCollector(t, home)
	req := conversation(77, 6)
	spans := req.ResourceSpans[0].ScopeSpans[0].Spans
	// Later calls first, one span a request, then all again.
	for i := len(spans) - 1; i >= 0; i-- {
		one := proto.Clone(req).(*coltracepb.ExportTraceServiceRequest)
		one.ResourceSpans[0].ScopeSpans[0].Spans = []*tracepb.Span{spans[i]}
		if code, err := postTraces(c.http, one); err != nil || code != 200 {
			t.Fatalf("export span %d: %d %v", i, code, err)
		}
	}
	if code, err := postTraces(c.http, req); err != nil || code != 200 {
		t.Fatalf("export again: %d %v", code, err)
	}
	sum := c.stop(t)
	if sum["sessions"] != float64(1) {
		t.Errorf("summary %v, want 1 session", sum)
	}
	st := recorder.Store{Root: home}
	ids, _ := st.IDs()
	if len(ids) != 1 {
		t.Fatalf("sessions %v, want 1", ids)
	}
	evs, _, err := st.Load(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, e := range evs {
		if e.Kind == session.KindModelCall {
			var a struct {
				SpanID string `json:"span_id"`
			}
			json.Unmarshal(e.Attrs, &a)
			order = append(order, a.SpanID)
		}
	}
	var want []string
	for _, sp := range spans {
		want = append(want, hex.EncodeToString(sp.SpanId))
	}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("model calls by span = %v, want each once in conversation order %v", order, want)
	}
}

// Off loopback the collector needs its token, and checks it.
func TestCollectToken(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	cmd := exec.Command("agentctl", "--home", home, "collect", "--listen", "0.0.0.0:0", "--grpc", "off")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "--listen 0.0.0.0:0 is not loopback: give --token") {
		t.Fatalf("collect off loopback without a token: %v %s", err, out)
	}
	c := startCollector(t, home, "--listen", "0.0.0.0:0", "--token", "s3cret")
	url := strings.Replace(c.http, "0.0.0.0", "127.0.0.1", 1)
	b, _ := proto.Marshal(conversation(5, 1))
	for _, tc := range []struct {
		auth string
		code int
	}{{"", 401}, {"Bearer nope", 401}, {"Bearer s3cret", 200}} {
		req, _ := http.NewRequestWithContext(context.Background(), "POST", url+"/v1/traces", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/x-protobuf")
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("Authorization %q: %s, want %d", tc.auth, resp.Status, tc.code)
		}
	}
	sum := c.stop(t)
	if st, _ := sum["stats"].(map[string]any); st["spans"] != float64(1) || st["invalid"] != float64(2) {
		t.Errorf("summary %v, want 1 span and 2 refused", sum)
	}
}
