package collect

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"sync"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"

	"github.com/agentctl/agentctl/internal/otelsession"
)

// Sink takes decoded OTLP exports: otelsession.Ingester in agentctl.
//
// Both methods may be called concurrently. They return only when every
// span (log record) not listed in Result.Rejected is durable; the server
// then answers success. A retried export (spans already delivered) is a
// success that adds nothing. ctx is the exporter's request: when it is
// cancelled the Sink may give up and return its error, and the export is
// not acknowledged (the exporter retries). Any error means nothing was
// acknowledged and the exporter should retry (503, gRPC UNAVAILABLE);
// what the Sink refuses for good it lists in Result.Rejected instead.
// An error wrapping ErrBusy is back-pressure: nothing was taken, and the
// exporter is told to retry after a while (429, RESOURCE_EXHAUSTED with
// RetryInfo).
type Sink interface {
	Traces(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (otelsession.Result, error)
	Logs(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (otelsession.Result, error)
}

// WireSink is a Sink that takes a protobuf export's bytes as they came,
// undecoded (the Ingester reads what it needs from them and spools them
// as they are; decoding is most of what an export costs): the HTTP
// receiver hands them over instead of a decoded request. The Sink keeps
// body. For traces an error wrapping otelsession.ErrMalformed means the
// bytes are not an export (400); content logs come decoded too.
type WireSink interface {
	TracesWire(ctx context.Context, body []byte) (otelsession.Result, error)
	LogsWire(ctx context.Context, req *collogspb.ExportLogsServiceRequest, body []byte) (otelsession.Result, error)
}

// ErrBusy, wrapped in a Sink's error, says the Sink is full for now (too
// much accepted but not yet written) and took nothing of the request.
var ErrBusy = errors.New("collect: sink busy")

// SessionCounter is a Sink that can say how many sessions it has written
// to, for progress lines.
type SessionCounter interface {
	Sessions() int
}

// Memory is a Sink that keeps spans and log records in memory, each span
// once by (trace id, span id), as a durable Sink must: a retried export
// adds nothing. It rejects nothing. It is for tests and for trying the
// receiver out.
type Memory struct {
	mu    sync.Mutex
	spans map[string]int // "trace/span" → times delivered
	order []string
	logs  int
}

var (
	_ Sink           = (*Memory)(nil)
	_ SessionCounter = (*Memory)(nil)
)

// Traces records each span of req once.
func (m *Memory) Traces(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (otelsession.Result, error) {
	if err := ctx.Err(); err != nil {
		return otelsession.Result{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.spans == nil {
		m.spans = map[string]int{}
	}
	n := 0
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				k := hex.EncodeToString(sp.GetTraceId()) + "/" + hex.EncodeToString(sp.GetSpanId())
				if m.spans[k] == 0 {
					m.order = append(m.order, k)
				}
				m.spans[k]++
				n++
			}
		}
	}
	return otelsession.Result{Accepted: n}, nil
}

// Logs counts the log records of req.
func (m *Memory) Logs(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (otelsession.Result, error) {
	if err := ctx.Err(); err != nil {
		return otelsession.Result{}, err
	}
	n := 0
	for _, rl := range req.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			n += len(sl.GetLogRecords())
		}
	}
	m.mu.Lock()
	m.logs += n
	m.mu.Unlock()
	return otelsession.Result{Accepted: n}, nil
}

// Spans lists the distinct spans received, "traceid/spanid" in hex, in
// the order they first came.
func (m *Memory) Spans() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.order...)
}

// Deliveries is how many times the span "traceid/spanid" was delivered.
func (m *Memory) Deliveries(key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.spans[key]
}

// LogRecords is how many log records were received.
func (m *Memory) LogRecords() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.logs
}

// Sessions is the number of distinct traces, Memory's idea of a session.
func (m *Memory) Sessions() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	for _, k := range m.order {
		trace, _, _ := strings.Cut(k, "/")
		seen[trace] = true
	}
	return len(seen)
}
