// Package collect measures `agentctl collect`, the OTLP receiver, against
// Jaeger all-in-one (memory storage) on the same OTLP batches: a
// 10,000-span export replayed as protobuf over HTTP by 4 concurrent
// exporters, its throughput and each export's latency; and the
// collector's peak RSS ingesting 1M spans against 10k (flat memory).
//
//	AGENTCTL_JAEGER_BIN=/path/to/jaeger go test -run '^$' -bench . -benchtime 1x ./bench/collect
//
// The agentctl binary is $AGENTCTL_BENCH_AGENTCTL (bench/run sets it to
// the binary it built), else one built here from ./cmd/agentctl.
package collect

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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

	"github.com/agentctl/agentctl/internal/recorder/otlp/jaegertest"
	"github.com/agentctl/agentctl/internal/testenv"
)

const (
	exporters     = 4
	batchSpans    = 512 // the OTel SDKs' default OTEL_BSP_MAX_EXPORT_BATCH_SIZE
	spansPerTrace = 100 // one conversation: an invoke_agent root, chat and execute_tool spans
	messageBytes  = 800 // gen_ai.input.messages grows by about this a turn
)

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func num(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

// vocabulary is what prose draws from: text that compresses about as
// an agent's conversation does (the collector compresses its spool, so a
// repeated sentence would flatter it; Jaeger's memory store does not care).
var vocabulary = strings.Fields(`the a of to and in is for on with that this it be as are was by
from at or an not have has had can will would should could file files function test tests error
errors build run config value values return type string int list map user model tool call result
output input path line lines code change changes fix update read write open close server client
request response token tokens message messages session agent step plan check pass fail retry time
data table query index field name id key version package module import export import_path repo
branch commit diff patch review merge main release docs readme note issue bug feature flag option
parse load save store cache buffer stream event events log logs trace span spans metric limit size
count total first last next previous before after when while because however then also only still`)

// prose is n bytes of words drawn from vocabulary.
func prose(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(vocabulary[rng.IntN(len(vocabulary))])
		b.WriteByte(' ')
	}
	return b.String()[:n]
}

// batches is n spans as OTLP/HTTP protobuf request bodies of batchSpans
// each, in trace order: conversations of spansPerTrace spans shaped as
// the OTel GenAI conventions shape an agent's (a root invoke_agent, then
// chat and execute_tool spans in turn, content on the chat spans).
// Deterministic: the same n gives the same bytes.
func batches(n int, seed uint64) [][]byte {
	res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "bench-agent"), str("telemetry.sdk.language", "go")}}
	scope := &commonpb.InstrumentationScope{Name: "bench/collect", Version: "1"}
	t0 := uint64(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC).UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	var out [][]byte
	var spans []*tracepb.Span
	flush := func() {
		req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{Resource: res,
			ScopeSpans: []*tracepb.ScopeSpans{{Scope: scope, Spans: spans}}}}}
		b, err := proto.Marshal(req)
		if err != nil {
			panic(err)
		}
		out = append(out, b)
		spans = nil
	}
	for i := range n {
		trace, k := uint64(i/spansPerTrace), i%spansPerTrace
		tid := make([]byte, 16)
		binary.BigEndian.PutUint64(tid, seed)
		binary.BigEndian.PutUint64(tid[8:], trace+1)
		sid := make([]byte, 8)
		binary.BigEndian.PutUint64(sid, seed<<40|trace<<12|uint64(k)+1)
		root := make([]byte, 8)
		binary.BigEndian.PutUint64(root, seed<<40|trace<<12|1)
		start := t0 + trace*uint64(time.Minute) + uint64(k)*uint64(100*time.Millisecond)
		sp := &tracepb.Span{TraceId: tid, SpanId: sid, StartTimeUnixNano: start, EndTimeUnixNano: start + uint64(90*time.Millisecond),
			Kind: tracepb.Span_SPAN_KIND_CLIENT}
		turn := int64((k + 1) / 2)
		switch {
		case k == 0:
			sp.Name, sp.Kind = "invoke_agent bench", tracepb.Span_SPAN_KIND_INTERNAL
			sp.EndTimeUnixNano = start + uint64(spansPerTrace)*uint64(100*time.Millisecond)
			sp.Attributes = []*commonpb.KeyValue{str("gen_ai.operation.name", "invoke_agent"), str("gen_ai.agent.name", "bench")}
		case k%2 == 1:
			sp.Name, sp.ParentSpanId = "chat gpt-4o-mini", root
			in := fmt.Sprintf(`[{"role":"user","parts":[{"type":"text","content":"turn %d: %s"}]}]`, turn, prose(rng, messageBytes))
			outMsg := fmt.Sprintf(`[{"role":"assistant","parts":[{"type":"tool_call","id":"call_%d_%d","name":"read_file","arguments":{"path":"f%d.txt"}}],"finish_reason":"tool_call"}]`, trace, turn, turn)
			sp.Attributes = []*commonpb.KeyValue{str("gen_ai.operation.name", "chat"), str("gen_ai.provider.name", "openai"),
				str("gen_ai.request.model", "gpt-4o-mini"), str("gen_ai.response.model", "gpt-4o-mini-2024-07-18"),
				num("gen_ai.usage.input_tokens", 200+turn*180), num("gen_ai.usage.output_tokens", 24),
				str("gen_ai.input.messages", in), str("gen_ai.output.messages", outMsg)}
		default:
			sp.Name, sp.ParentSpanId, sp.Kind = "execute_tool read_file", root, tracepb.Span_SPAN_KIND_INTERNAL
			sp.Attributes = []*commonpb.KeyValue{str("gen_ai.operation.name", "execute_tool"), str("gen_ai.tool.name", "read_file"),
				str("gen_ai.tool.call.id", fmt.Sprintf("call_%d_%d", trace, turn)), str("gen_ai.tool.call.result", "contents of f"+strconv.FormatInt(turn, 10))}
		}
		spans = append(spans, sp)
		if len(spans) == batchSpans {
			flush()
		}
	}
	if len(spans) > 0 {
		flush()
	}
	return out
}

// replay posts every batch to url/v1/traces from exporters goroutines,
// each taking the next batch when its previous one was answered, as a
// BatchSpanProcessor's exporter does. It returns the wall time and every
// export's latency; any answer but 200 fails b.
func replay(b testing.TB, url string, bodies [][]byte) (time.Duration, []time.Duration) {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: exporters}, Timeout: time.Minute}
	next := make(chan []byte)
	go func() {
		for _, body := range bodies {
			next <- body
		}
		close(next)
	}()
	var mu sync.Mutex
	var lat []time.Duration
	var first error
	var wg sync.WaitGroup
	t0 := time.Now()
	for range exporters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for body := range next {
				for {
					s := time.Now()
					resp, err := client.Post(url+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
					if err != nil {
						mu.Lock()
						first = err
						mu.Unlock()
						return
					}
					msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
					resp.Body.Close()
					d := time.Since(s)
					if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
						time.Sleep(50 * time.Millisecond) // back-pressure: the exporter retries
						continue
					}
					mu.Lock()
					if resp.StatusCode != 200 && first == nil {
						first = fmt.Errorf("POST /v1/traces: %s: %s", resp.Status, msg)
					}
					lat = append(lat, d)
					mu.Unlock()
					break
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	if first != nil {
		b.Fatal(first)
	}
	return wall, lat
}

func percentile(d []time.Duration, p float64) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(p * float64(len(s)-1))
	return float64(s[i]) / float64(time.Millisecond)
}

// agentctlBin is the binary to bench.
func agentctlBin(b *testing.B) string {
	if p := os.Getenv("AGENTCTL_BENCH_AGENTCTL"); p != "" {
		return p
	}
	p := filepath.Join(b.TempDir(), "agentctl")
	cmd := exec.Command("go", "build", "-o", p, "./cmd/agentctl")
	cmd.Dir = testenv.Root()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build ./cmd/agentctl: %v\n%s", err, out)
	}
	return p
}

// collector is a running `agentctl collect`.
type collector struct {
	cmd  *exec.Cmd
	http string
	out  *bufio.Reader
	errb *bytes.Buffer
}

func startCollect(b *testing.B, bin string, extra ...string) *collector {
	b.Helper()
	home := filepath.Join(b.TempDir(), "home")
	args := append([]string{"--home", home, "collect", "--json", "--listen", "127.0.0.1:0", "--grpc", "off"}, extra...)
	cmd := exec.Command(bin, args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &collector{cmd: cmd, out: bufio.NewReader(stdout), errb: &errb}
	line, err := c.out.ReadBytes('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		b.Fatalf("agentctl collect did not start: %v: %s", err, errb.String())
	}
	var l struct{ HTTP string }
	if err := json.Unmarshal(line, &l); err != nil || l.HTTP == "" {
		b.Fatalf("agentctl collect: first line %q: %v", line, err)
	}
	c.http = "http://" + l.HTTP
	return c
}

// peakRSS is the process's resident high-water mark in MB (VmHWM: its
// own, not what the parent had before exec).
func peakRSS(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// stop sends SIGTERM, waits for the drain and seal, and returns the
// summary line.
func (c *collector) stop(b *testing.B) map[string]any {
	b.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	rest, _ := io.ReadAll(c.out)
	if err := c.cmd.Wait(); err != nil {
		b.Fatalf("agentctl collect after SIGTERM: %v: %s", err, c.errb.String())
	}
	var sum map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(rest), &sum); err != nil {
		b.Fatalf("agentctl collect summary %q: %v", rest, err)
	}
	return sum
}

// BenchmarkIngest: the same 10,000 spans (20 protobuf batches) into each
// target by 4 concurrent exporters; spans/s over the whole replay, and
// the p50/p99 of one export's answer (agentctl answers only once the
// spans are durable; Jaeger once they are in its memory).
func BenchmarkIngest(b *testing.B) {
	const n = 10_000
	for _, target := range []string{"agentctl", "jaeger"} {
		b.Run("target="+target, func(b *testing.B) {
			if os.Getenv(jaegertest.BinEnv) == "" && target == "jaeger" {
				b.Skipf("$%s is not set", jaegertest.BinEnv)
			}
			var bin string
			if target == "agentctl" {
				bin = agentctlBin(b)
			}
			var walls []time.Duration
			var lat []time.Duration
			for i := 0; b.Loop(); i++ {
				// A fresh target and fresh ids each time: a retry would be
				// cheaper than an export.
				bodies := batches(n, uint64(i+1))
				var url string
				var c *collector
				if target == "agentctl" {
					c = startCollect(b, bin)
					url = c.http
				} else {
					url = "http://" + jaegertest.Start(b).HTTP
				}
				w, l := replay(b, url, bodies)
				walls, lat = append(walls, w), append(lat, l...)
				if c != nil {
					sum := c.stop(b)
					if st, _ := sum["stats"].(map[string]any); st["spans"] != float64(n) {
						b.Fatalf("agentctl collect stored %v spans, want %d: %v", st["spans"], n, sum)
					}
				}
			}
			var total time.Duration
			for _, w := range walls {
				total += w
			}
			b.ReportMetric(float64(n*len(walls))/total.Seconds(), "spans/s")
			b.ReportMetric(percentile(lat, 0.50), "p50-ms")
			b.ReportMetric(percentile(lat, 0.99), "p99-ms")
		})
	}
}

// BenchmarkCollectRSS: agentctl collect's peak RSS ingesting n spans,
// 4 exporters; 1M against 10k says whether memory stays flat.
func BenchmarkCollectRSS(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("spans=%d", n), func(b *testing.B) {
			bin := agentctlBin(b)
			var peak, anon float64
			for i := 0; b.Loop(); i++ {
				c := startCollect(b, bin)
				stop := sampleAnon(c.cmd.Process.Pid, &anon)
				// A million spans in 10,000-span slices, so the bench's own
				// memory stays small.
				const slice = 10_000
				for off := 0; off < n; off += slice {
					replay(b, c.http, batches(min(slice, n-off), uint64(1000*(i+1)+off/slice)))
				}
				stop()
				rss, err := peakRSS(c.cmd.Process.Pid)
				if err != nil {
					b.Fatal(err)
				}
				peak = max(peak, rss)
				sum := c.stop(b)
				if st, _ := sum["stats"].(map[string]any); st["spans"] != float64(n) {
					b.Fatalf("agentctl collect stored %v spans, want %d", st["spans"], n)
				}
			}
			b.ReportMetric(peak, "peak-rss-MB")
			b.ReportMetric(anon, "peak-anon-MB")
		})
	}
}

// sampleAnon keeps in *peak the largest RssAnon of process pid (its own
// memory, without the pages of its executable that VmHWM counts too,
// about 50-90 MB for agentctl's, varying with how the kernel mapped
// them), sampled every 20 ms until the returned stop.
func sampleAnon(pid int, peak *float64) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
				for _, l := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(l, "RssAnon:"); ok {
						if kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64); err == nil {
							*peak = max(*peak, kb/1024)
						}
					}
				}
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() { close(done); <-finished }
}

const (
	sdkApps        = 8       // OpenTelemetry SDK apps exporting at once
	sdkExports     = 2       // exports each sends back to back
	sdkExportBytes = 6 << 20 // the JS SDK's default batch of 512 spans at ~12 KB a span
)

// sdkBodies are the 6 MB exports of one app: 512 spans each, a 12 KB
// attribute a span (a db.statement, a tool's output), traces of 64.
func sdkBodies(app int) [][]byte {
	res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", fmt.Sprintf("sdk-app-%d", app)), str("telemetry.sdk.language", "nodejs")}}
	scope := &commonpb.InstrumentationScope{Name: "bench/collect/sdk", Version: "1"}
	rng := rand.New(rand.NewPCG(uint64(app), 11))
	t0 := uint64(time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC).UnixNano())
	var out [][]byte
	for e := range sdkExports {
		var spans []*tracepb.Span
		for k := range batchSpans {
			tid := make([]byte, 16)
			binary.BigEndian.PutUint64(tid, uint64(app+1))
			binary.BigEndian.PutUint64(tid[8:], uint64(e*batchSpans+k)/64+1)
			sid := make([]byte, 8)
			binary.BigEndian.PutUint64(sid, uint64(app+1)<<40|uint64(e*batchSpans+k)+1)
			start := t0 + uint64(e*batchSpans+k)*uint64(time.Millisecond)
			spans = append(spans, &tracepb.Span{TraceId: tid, SpanId: sid, Name: "pg.query", StartTimeUnixNano: start, EndTimeUnixNano: start + uint64(time.Millisecond),
				Kind: tracepb.Span_SPAN_KIND_CLIENT, Attributes: []*commonpb.KeyValue{str("db.system", "postgresql"), str("db.statement", prose(rng, sdkExportBytes/batchSpans))}})
		}
		b, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{Resource: res, ScopeSpans: []*tracepb.ScopeSpans{{Scope: scope, Spans: spans}}}}})
		if err != nil {
			panic(err)
		}
		out = append(out, b)
	}
	return out
}

// sdkExport sends one export as the OpenTelemetry JS SDK's OTLP/HTTP
// exporter does (otlp-exporter-base): a 10 s timeout per attempt, up to
// 5 attempts on 429/502/503/504 or a network error, waiting Retry-After
// when given, else 1 s growing 1.5x to 5 s (jittered). It reports
// whether the export was acknowledged; if not its spans are dropped.
func sdkExport(client *http.Client, url string, body []byte, rng *rand.Rand) bool {
	backoff := time.Second
	for attempt := 1; ; attempt++ {
		resp, err := client.Post(url+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
		retry := time.Duration(rng.Float64() * float64(backoff))
		if err == nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return true
			}
			switch resp.StatusCode {
			case 429, 502, 503, 504:
			default:
				return false
			}
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
				retry = time.Duration(s) * time.Second
			}
		}
		if attempt == 5 {
			return false
		}
		time.Sleep(retry)
		backoff = min(time.Duration(float64(backoff)*1.5), 5*time.Second)
	}
}

// BenchmarkSDKBurst: 8 SDK-shaped apps each export two 6 MB batches at
// once, as a fleet of OpenTelemetry JS services with the default batch
// processor does after a busy second; spans dropped (exports the
// exporters gave up on: goal 0) and the wall time until the last was
// acknowledged.
func BenchmarkSDKBurst(b *testing.B) {
	for _, target := range []string{"agentctl", "jaeger"} {
		b.Run("target="+target, func(b *testing.B) {
			if os.Getenv(jaegertest.BinEnv) == "" && target == "jaeger" {
				b.Skipf("$%s is not set", jaegertest.BinEnv)
			}
			var bin string
			if target == "agentctl" {
				bin = agentctlBin(b)
			}
			bodies := make([][][]byte, sdkApps)
			for a := range sdkApps {
				bodies[a] = sdkBodies(a)
			}
			var dropped, walls float64
			runs := 0
			for b.Loop() {
				var url string
				var c *collector
				if target == "agentctl" {
					c = startCollect(b, bin)
					url = c.http
				} else {
					url = "http://" + jaegertest.Start(b).HTTP
				}
				var lost sync.WaitGroup
				var mu sync.Mutex
				n := 0
				t0 := time.Now()
				for a := range sdkApps {
					lost.Add(1)
					go func() {
						defer lost.Done()
						client := &http.Client{Timeout: 10 * time.Second}
						rng := rand.New(rand.NewPCG(uint64(a), 3))
						for _, body := range bodies[a] {
							if !sdkExport(client, url, body, rng) {
								mu.Lock()
								n += batchSpans
								mu.Unlock()
							}
						}
					}()
				}
				lost.Wait()
				walls += time.Since(t0).Seconds()
				dropped += float64(n)
				runs++
				if c != nil {
					sum := c.stop(b)
					if st, _ := sum["stats"].(map[string]any); st["spans"] != float64(sdkApps*sdkExports*batchSpans-n) {
						b.Fatalf("agentctl collect stored %v spans, want the %d acknowledged", st["spans"], sdkApps*sdkExports*batchSpans-n)
					}
				}
			}
			b.ReportMetric(dropped/float64(runs), "spans-dropped")
			b.ReportMetric(walls/float64(runs), "wall-s")
		})
	}
}
