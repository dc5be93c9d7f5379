package otelsession

import (
	"errors"
	"time"

	"github.com/agentctl/agentctl/internal/recorder"
)

// Options bound and tune an Ingester. The zero value is usable: every
// limit left 0 takes its default.
type Options struct {
	// MaxSpansPerSession bounds the spans (and log records) one session
	// takes (one trace, or one session.id); past it a span is rejected
	// with that reason. Default 100,000.
	MaxSpansPerSession int
	// MaxAttrBytes bounds one attribute value (a string's bytes, an
	// array's or map's total); a span or log record with a larger one is
	// rejected whole. Default 1 MiB.
	MaxAttrBytes int
	// MaxPending bounds the spans and log records accepted but not yet in
	// a session (waiting for Settle): past it Traces and Logs return
	// ErrBusy and accept nothing, so a receiver answers 429 /
	// RESOURCE_EXHAUSTED and the exporter retries later. Default 200,000.
	MaxPending int
	// MaxLiveSessions bounds the sessions kept in memory with their log
	// open (the conversation so far, the spans in it); past it, after
	// each write pass, the ones written longest ago are closed and read
	// again only if a trace comes for them. A trace that continued an
	// evicted session's conversation in a trace of its own (no session
	// key) then starts a new session. Default 64.
	MaxLiveSessions int
	// EvictIdle is how long a live session must go unwritten before it
	// may be evicted (beyond MaxLiveSessions; past 4x MaxLiveSessions
	// the least recent go regardless). Default 2m.
	EvictIdle time.Duration
	// MaxPendingBytes bounds the same by weight (the records' share of
	// the spool frames they came in), so the memory they hold stays
	// bounded whatever the spans' size. Default 16 MiB.
	MaxPendingBytes int64
	// Settle is how long a trace must be quiet (no new span or log record)
	// before its pending spans are written into its session: time for
	// content log records and out-of-order spans of other requests to
	// arrive, so the session's events are in conversation order. Default
	// 2s; Close and Flush write everything at once.
	Settle time.Duration
	// SpanWait is how long a trace that holds content log records but
	// no span yet waits for one (quiet that long, it is written as it
	// is): an SDK exports log records every second but spans every 5 s,
	// and a model call's span only when the call ends, so its content
	// comes first by the exporters' batch delay plus the call's latency.
	// Default 60s; a trace with a span waits Settle.
	SpanWait time.Duration
	// Source names who fed the spans, in each header's attrs
	// (otlp_source): "collect", "import".
	Source string
	// Recorder is handed to every log the Ingester writes (Redact, NoSync
	// in tests, FS).
	Recorder recorder.Options
	// Clock is time.Now when nil (Settle is measured with it).
	Clock func() time.Time
	// Logf is told what an operator should see while the Ingester runs:
	// a trace that could not be written and was set aside, writing that
	// resumed, a damaged session skipped. Nil says nothing.
	Logf func(format string, args ...any)
	// NoBackground turns off the goroutine that writes settled traces
	// every Settle/2; the caller calls Flush (tests, import).
	NoBackground bool
}

func (o Options) withDefaults() Options {
	if o.MaxSpansPerSession <= 0 {
		o.MaxSpansPerSession = 100_000
	}
	if o.MaxAttrBytes <= 0 {
		o.MaxAttrBytes = 1 << 20
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 200_000
	}
	if o.MaxPendingBytes <= 0 {
		o.MaxPendingBytes = 16 << 20
	}
	if o.MaxLiveSessions <= 0 {
		o.MaxLiveSessions = 64
	}
	if o.Settle <= 0 {
		o.Settle = 2 * time.Second
	}
	if o.EvictIdle <= 0 {
		o.EvictIdle = 2 * time.Minute
	}
	if o.SpanWait <= 0 {
		o.SpanWait = time.Minute
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// Errors an Ingester returns.
var (
	// ErrBusy: more spans are pending than Options.MaxPending; nothing of
	// the request was accepted, and the exporter should retry later.
	ErrBusy = errors.New("otelsession: too many spans waiting to be written; retry later")
	// ErrMalformed: the bytes given to TracesWire are not an OTLP
	// protobuf trace export (a client error: 400, INVALID_ARGUMENT).
	ErrMalformed = errors.New("not an OTLP protobuf trace export")
	// ErrWritesFailing: the last attempt to write sessions failed (a
	// full disk, an I/O error); nothing of the request was taken, so
	// the spool does not grow past what the disk can take back. A
	// receiver answers 503 with Retry-After (UNAVAILABLE over gRPC).
	ErrWritesFailing = errors.New("otelsession: sessions cannot be written now; retry later")
	// ErrClosed: the Ingester was closed.
	ErrClosed = errors.New("otelsession: ingester closed")
)
