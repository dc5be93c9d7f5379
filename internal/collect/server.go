package collect

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/internal/clip"
	"github.com/agentctl/agentctl/internal/otelsession"
)

// Defaults for the zero fields of Config.
const (
	// DefaultMaxRequestBytes is the OpenTelemetry Collector's own default
	// (confighttp max_request_body_size).
	DefaultMaxRequestBytes  = 20 << 20
	DefaultMaxDecodedBytes  = 64 << 20
	DefaultMaxInflightBytes = 512 << 20
	DefaultRetryAfter       = time.Second
	// DefaultReadTimeout bounds how long one request may take to arrive,
	// headers and body: 20 MiB in a minute is 2.8 Mbit/s.
	DefaultReadTimeout = time.Minute
	// DefaultStallTimeout is how long a request's body may send nothing
	// before the upload is cut (its budget released).
	DefaultStallTimeout = 10 * time.Second
	// DefaultIdleTimeout closes a connection (HTTP keep-alive, gRPC) that
	// has carried no request for this long.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxConns bounds the connections served at once per listener,
	// well under the usual 1,024 file descriptors.
	DefaultMaxConns = 512
)

// Config says how a Server answers.
type Config struct {
	// Sink takes every decoded export. Required.
	Sink Sink
	// Token, when set, must come with every request, as
	// "Authorization: Bearer TOKEN" (OTEL_EXPORTER_OTLP_HEADERS) or
	// X-Agentctl-Token. Without it only programs on this machine are
	// served: the caller binds loopback, and HTTP requests a web page
	// sent are refused.
	Token string
	// MaxRequestBytes bounds a request's body as sent (compressed).
	MaxRequestBytes int64
	// MaxDecodedBytes bounds it after gunzip, and a gRPC message.
	MaxDecodedBytes int64
	// MaxInflightBytes bounds the memory of all requests being served at
	// once; over it, requests are refused with back-pressure.
	MaxInflightBytes int64
	// RetryAfter is what a refused exporter is told to wait.
	RetryAfter time.Duration
	// ReadTimeout bounds the time a request may take to arrive, headers
	// and body; StallTimeout the time its body may send nothing. Past
	// either the upload is cut and what it reserved is released, so
	// clients that stall cannot hold the in-flight budget.
	ReadTimeout  time.Duration
	StallTimeout time.Duration
	// IdleTimeout closes a connection that has carried no request for
	// this long (HTTP keep-alive and gRPC's MaxConnectionIdle).
	IdleTimeout time.Duration
	// MaxConns bounds the connections each listener serves at once
	// (Listener); more wait to be accepted.
	MaxConns int
	// Forward, if set, gets a copy of every accepted export.
	Forward *Forwarder
	// Logf, if set, is told of what an operator should see (a failing
	// Sink); never of each request.
	Logf func(format string, args ...any)
}

// Server answers OTLP exports over HTTP (it is an http.Handler) and gRPC
// (GRPC).
type Server struct {
	cfg    Config
	budget budget
	stats  counters
	// decodes holds, per gRPC request message, what its decoding
	// reserved of the budget or why it was refused (grpcCodec), until
	// the call ends (grpcUnary).
	decodes sync.Map
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Server, error) {
	if cfg.Sink == nil {
		return nil, errors.New("collect: no sink")
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.MaxDecodedBytes <= 0 {
		cfg.MaxDecodedBytes = DefaultMaxDecodedBytes
	}
	if cfg.MaxDecodedBytes < cfg.MaxRequestBytes {
		cfg.MaxDecodedBytes = cfg.MaxRequestBytes
	}
	if cfg.MaxInflightBytes <= 0 {
		cfg.MaxInflightBytes = DefaultMaxInflightBytes
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = DefaultRetryAfter
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = DefaultStallTimeout
	}
	cfg.StallTimeout = min(cfg.StallTimeout, cfg.ReadTimeout)
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	s := &Server{cfg: cfg}
	s.budget.total = cfg.MaxInflightBytes
	return s, nil
}

// Stats are a Server's counts since it started.
type Stats struct {
	Requests         int64 `json:"requests"`
	Spans            int64 `json:"spans"`
	LogRecords       int64 `json:"log_records"`
	RejectedSpans    int64 `json:"rejected_spans"`
	RejectedLogs     int64 `json:"rejected_log_records"`
	Throttled        int64 `json:"throttled"`      // answered 429 / RESOURCE_EXHAUSTED+RetryInfo
	Invalid          int64 `json:"invalid"`        // answered 4xx other than 429
	SinkErrors       int64 `json:"sink_errors"`    // answered 503 / UNAVAILABLE
	InflightBytes    int64 `json:"inflight_bytes"` // reserved now
	MaxInflightBytes int64 `json:"max_inflight_bytes"`
}

type counters struct {
	requests, spans, logs, rejSpans, rejLogs, throttled, invalid, sinkErrors atomic.Int64
}

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	return Stats{
		Requests: s.stats.requests.Load(), Spans: s.stats.spans.Load(), LogRecords: s.stats.logs.Load(),
		RejectedSpans: s.stats.rejSpans.Load(), RejectedLogs: s.stats.rejLogs.Load(),
		Throttled: s.stats.throttled.Load(), Invalid: s.stats.invalid.Load(), SinkErrors: s.stats.sinkErrors.Load(),
		InflightBytes: s.budget.inUse(), MaxInflightBytes: s.cfg.MaxInflightBytes,
	}
}

// signal is what an export carries.
type signal int

const (
	traces signal = iota
	logs
)

func (g signal) String() string {
	if g == logs {
		return "logs"
	}
	return "traces"
}

// path is the OTLP/HTTP path of the signal, as a forward target takes it.
func (g signal) path() string { return "/v1/" + g.String() }

// account adds a Sink's result to the counts.
func (s *Server) account(g signal, res otelsession.Result) {
	if g == logs {
		s.stats.logs.Add(int64(res.Accepted))
		s.stats.rejLogs.Add(int64(len(res.Rejected)))
		return
	}
	s.stats.spans.Add(int64(res.Accepted))
	s.stats.rejSpans.Add(int64(len(res.Rejected)))
}

// maxReasons is how many distinct reasons an error message names.
const maxReasons = 20

// rejectionMessage is partial_success.error_message: each distinct
// reason once, with how many items it refused and the first of them
// (a span bomb's 10,000 spans over the limit are one line, not 10,000).
func rejectionMessage(g signal, rej []otelsession.Rejection) string {
	if len(rej) == 0 {
		return ""
	}
	what := "spans"
	if g == logs {
		what = "log records"
	}
	type reason struct {
		first otelsession.Rejection
		n     int
	}
	var order []string
	by := map[string]*reason{}
	for _, r := range rej {
		if by[r.Reason] == nil {
			by[r.Reason] = &reason{first: r}
			order = append(order, r.Reason)
		}
		by[r.Reason].n++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "agentctl collect rejected %d %s: ", len(rej), what)
	for i, text := range order {
		if i == maxReasons {
			fmt.Fprintf(&b, "; and %d other reasons", len(order)-maxReasons)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		r := by[text]
		switch {
		case r.first.SpanID != "":
			fmt.Fprintf(&b, "span %s/%s", r.first.TraceID, r.first.SpanID)
		case r.first.TraceID != "":
			fmt.Fprintf(&b, "trace %s", r.first.TraceID)
		default:
			b.WriteString("a record")
		}
		if r.n > 1 {
			fmt.Fprintf(&b, " and %d more", r.n-1)
		}
		b.WriteString(": ")
		b.WriteString(clip.Bytes(text, 300))
	}
	return b.String()
}

// retryAfterSeconds is d (0: Config.RetryAfter) as the header's whole
// seconds (at least 1).
func (s *Server) retryAfterSeconds(d time.Duration) int {
	if d <= 0 {
		d = s.cfg.RetryAfter
	}
	n := int((d + time.Second - 1) / time.Second)
	return max(n, 1)
}

// retryAfter is how long a busy Sink asks exporters to wait (its error's
// RetryAfter method, sized from its backlog), or 0 for Config.RetryAfter.
func retryAfter(err error) time.Duration {
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) {
		return ra.RetryAfter()
	}
	return 0
}
