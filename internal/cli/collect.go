package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"google.golang.org/grpc"

	"github.com/agentctl/agentctl/internal/collect"
	"github.com/agentctl/agentctl/internal/loopback"
)

type collectOptions struct {
	Listen  string
	GRPC    string
	Token   string
	Forward string
	JSON    bool

	MaxRequestBytes  int64
	MaxDecodedBytes  int64
	MaxInflightBytes int64
	ReadTimeout      time.Duration
	IdleTimeout      time.Duration
	MaxConns         int
	// Per-session limits, the Ingester's.
	MaxSpansPerSession int
	MaxAttributeBytes  int
	// SpanWait is how long content log records wait for their span.
	SpanWait time.Duration

	// DrainTimeout bounds the drain after SIGTERM.
	DrainTimeout time.Duration
	// ProgressEvery is how often a progress line is printed (stderr).
	ProgressEvery time.Duration
}

func newCollectCmd(f *Factory, runF func(context.Context, *collectOptions) error) *cobra.Command {
	opts := &collectOptions{}
	cmd := &cobra.Command{
		Use:   "collect [flags]",
		Short: "Receive OpenTelemetry traces and logs (OTLP) from production agents as sessions",
		Long: `Serve OTLP, the OpenTelemetry protocol, and write the traces and logs that
agents export (OpenTelemetry GenAI conventions, OpenInference, OpenLLMetry,
Vercel's AI SDK) into sessions under the home as they arrive: 'sessions',
'show', 'query' see them while collect runs.

  HTTP  --listen (default 127.0.0.1:4318): POST /v1/traces and /v1/logs,
        application/x-protobuf or application/json, gzip or not
  gRPC  --grpc (default 127.0.0.1:4317): TraceService and LogsService

Point an app's exporter at it:
  OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 (or :4317 with
  OTEL_EXPORTER_OTLP_PROTOCOL=grpc), OTEL_METRICS_EXPORTER=none

An export is answered success only once its spans are durable in the
sessions' logs; a retried export adds nothing. Spans refused (over a
limit, unmappable) come back as OTLP's partial_success, each with its
reason. Bounded: request size before and after gunzip, memory in flight
across requests (over it: 429 / RESOURCE_EXHAUSTED with Retry-After, so
exporters back off), spans per session and attribute sizes, the time a
request may take to arrive (--read-timeout; a body that sends nothing
for 10s is cut), idle connections (--idle-timeout) and connections per
port (--max-conns). One collect per home: a second is refused.

Only loopback by default; any other address needs --token, which
clients send as Authorization: Bearer TOKEN
(OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20TOKEN).

--forward URL sends every accepted export on to another OTLP/HTTP
collector unchanged (the same bytes and content type), asynchronously:
a forward target that is down is logged, never fatal, and never holds
an acknowledgement.

SIGTERM or SIGINT stops taking exports, answers those in flight, seals
the sessions and exits 0. Progress (sessions, spans/s) goes to stderr;
--json prints where it listens first, then a summary, as JSON lines.`,
		Example: `  agentctl collect
  agentctl collect --json --listen 127.0.0.1:0 --grpc 127.0.0.1:0
  agentctl collect --listen 0.0.0.0:4318 --grpc off --token "$TOKEN" --forward http://jaeger:4318`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return collectRun(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Listen, "listen", "127.0.0.1:4318", "OTLP/HTTP address (host:port), or off")
	fl.StringVar(&opts.GRPC, "grpc", "127.0.0.1:4317", "OTLP/gRPC address (host:port), or off")
	fl.StringVar(&opts.Token, "token", os.Getenv("AGENTCTL_COLLECT_TOKEN"), "bearer token every client must send (env AGENTCTL_COLLECT_TOKEN); needed off loopback")
	fl.StringVar(&opts.Forward, "forward", "", "also send every export to this OTLP/HTTP collector (http://HOST:4318)")
	fl.BoolVar(&opts.JSON, "json", false, "print the addresses, then the summary, as JSON lines")
	fl.Int64Var(&opts.MaxRequestBytes, "max-request-bytes", collect.DefaultMaxRequestBytes, "largest request body as sent")
	fl.Int64Var(&opts.MaxDecodedBytes, "max-decoded-bytes", collect.DefaultMaxDecodedBytes, "largest request after gunzip (and gRPC message)")
	fl.Int64Var(&opts.MaxInflightBytes, "max-inflight-bytes", collect.DefaultMaxInflightBytes, "memory of all requests in flight; beyond it exporters are told to retry later")
	fl.DurationVar(&opts.ReadTimeout, "read-timeout", collect.DefaultReadTimeout, "time a request may take to arrive, headers and body (a body sending nothing for 10s is cut sooner)")
	fl.DurationVar(&opts.IdleTimeout, "idle-timeout", collect.DefaultIdleTimeout, "close a connection (HTTP or gRPC) idle this long")
	fl.IntVar(&opts.MaxConns, "max-conns", collect.DefaultMaxConns, "connections served at once per port; more wait")
	fl.IntVar(&opts.MaxSpansPerSession, "max-spans-per-session", 0, "spans one session may take; more are refused (0: the mapping's default)")
	fl.IntVar(&opts.MaxAttributeBytes, "max-attribute-bytes", 0, "largest attribute value kept (0: the mapping's default)")
	fl.DurationVar(&opts.SpanWait, "span-wait", time.Minute, "how long a trace's content log records wait for its span before they are written alone (past the exporters' span batch delay plus a model call's latency)")
	fl.DurationVar(&opts.DrainTimeout, "drain-timeout", 30*time.Second, "on SIGTERM, how long exports in flight may take to finish")
	fl.DurationVar(&opts.ProgressEvery, "progress", 10*time.Second, "how often a progress line goes to stderr when it is not a terminal (0: never)")
	return cmd
}

// collectListening is the first --json line: where collect listens.
type collectListening struct {
	Kind string `json:"kind"` // "listening"
	HTTP string `json:"http,omitempty"`
	GRPC string `json:"grpc,omitempty"`
}

// collectSummary is the last --json line (and the table without it).
type collectSummary struct {
	Kind string `json:"kind"` // "finished"
	// Sessions is how many sessions this run created (sessions it
	// extended, already in the home, are not counted).
	Sessions int                   `json:"sessions"`
	Seconds  float64               `json:"seconds"`
	Stats    collect.Stats         `json:"stats"`
	Forward  *collect.ForwardStats `json:"forward,omitempty"`
}

func collectRun(ctx context.Context, f *Factory, opts *collectOptions) error {
	httpOn, grpcOn := !isOff(opts.Listen), !isOff(opts.GRPC)
	if !httpOn && !grpcOn {
		return usageError{errors.New("--listen off and --grpc off: nothing would be served")}
	}
	for _, a := range []struct{ flag, addr string }{{"--listen", opts.Listen}, {"--grpc", opts.GRPC}} {
		if isOff(a.addr) {
			continue
		}
		host, _, err := net.SplitHostPort(a.addr)
		if err != nil {
			return usageError{fmt.Errorf("%s %q: want HOST:PORT (or off): %v", a.flag, a.addr, err)}
		}
		if !loopback.Host(host) && opts.Token == "" {
			return usageError{fmt.Errorf("%s %s is not loopback: give --token (or AGENTCTL_COLLECT_TOKEN) so that only your exporters can write sessions", a.flag, a.addr)}
		}
	}
	logf := func(format string, args ...any) { fmt.Fprintf(f.Err, format+"\n", args...) }
	var fw *collect.Forwarder
	if opts.Forward != "" {
		var err error
		fw, err = collect.NewForwarder(collect.ForwardConfig{URL: opts.Forward, Logf: logf})
		if err != nil {
			return usageError{fmt.Errorf("--forward: %w", err)}
		}
	}
	sink, closeSink, err := openCollectSink(f, opts)
	if err != nil {
		return err
	}
	srv, err := collect.New(collect.Config{Sink: sink, Token: opts.Token, MaxRequestBytes: opts.MaxRequestBytes,
		MaxDecodedBytes: opts.MaxDecodedBytes, MaxInflightBytes: opts.MaxInflightBytes, Forward: fw, Logf: logf,
		ReadTimeout: opts.ReadTimeout, IdleTimeout: opts.IdleTimeout, MaxConns: opts.MaxConns})
	if err != nil {
		closeSink()
		return err
	}

	var (
		hs    *http.Server
		g     *grpc.Server
		info  = collectListening{Kind: "listening"}
		fails = make(chan error, 2)
	)
	if httpOn {
		ln, err := net.Listen("tcp", opts.Listen)
		if err != nil {
			closeSink()
			return fmt.Errorf("collect: listen on %s (--listen): %w", opts.Listen, err)
		}
		info.HTTP = ln.Addr().String()
		hs = srv.HTTPServer()
		go func() {
			if err := hs.Serve(srv.Listener(ln)); err != nil && !errors.Is(err, http.ErrServerClosed) {
				fails <- fmt.Errorf("collect: serve HTTP on %s: %w", info.HTTP, err)
			}
		}()
	}
	if grpcOn {
		ln, err := net.Listen("tcp", opts.GRPC)
		if err != nil {
			if hs != nil {
				hs.Close()
			}
			closeSink()
			return fmt.Errorf("collect: listen on %s (--grpc): %w", opts.GRPC, err)
		}
		info.GRPC = ln.Addr().String()
		g = srv.GRPC()
		go func() {
			if err := g.Serve(srv.GRPCListener(ln, info.HTTP)); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				fails <- fmt.Errorf("collect: serve gRPC on %s: %w", info.GRPC, err)
			}
		}()
	}
	if opts.JSON {
		b, _ := json.Marshal(info)
		fmt.Fprintln(f.Out, string(b))
	} else {
		fmt.Fprintf(f.Err, "agentctl collect writing sessions to %s\n", f.Home)
		if info.HTTP != "" {
			fmt.Fprintf(f.Err, "  OTLP/HTTP on %s: OTEL_EXPORTER_OTLP_ENDPOINT=http://%s\n", info.HTTP, info.HTTP)
		}
		if info.GRPC != "" {
			fmt.Fprintf(f.Err, "  OTLP/gRPC on %s: OTEL_EXPORTER_OTLP_ENDPOINT=http://%s OTEL_EXPORTER_OTLP_PROTOCOL=grpc\n", info.GRPC, info.GRPC)
		}
	}

	began := time.Now()
	stopProgress := collectProgress(f, opts, srv, sink, began)
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-fails:
	}
	stopProgress()

	// Drain: stop accepting, answer what is in flight, then seal.
	drain, cancel := context.WithTimeout(context.Background(), opts.DrainTimeout)
	defer cancel()
	if hs != nil {
		if err := hs.Shutdown(drain); err != nil {
			logf("agentctl collect: HTTP exports still in flight after %s: %v", opts.DrainTimeout, err)
			hs.Close()
		}
	}
	if g != nil {
		done := make(chan struct{})
		go func() { g.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-drain.Done():
			logf("agentctl collect: gRPC exports still in flight after %s: stopped", opts.DrainTimeout)
			g.Stop()
		}
	}
	res := collectSummary{Kind: "finished", Stats: srv.Stats(), Seconds: time.Since(began).Seconds()}
	if fw != nil {
		fctx, fcancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := fw.Close(fctx); err != nil {
			logf("agentctl %v", err)
		}
		fcancel()
		st := fw.Stats()
		res.Forward = &st
	}
	cerr := closeSink()
	res.Sessions = sessionCount(sink) // after Close: it writes what was pending
	if opts.JSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(f.Out, string(b))
	} else {
		fmt.Fprintf(f.Out, "collected %d spans and %d log records into %d sessions in %.1fs", res.Stats.Spans, res.Stats.LogRecords, res.Sessions, res.Seconds)
		if n := res.Stats.RejectedSpans + res.Stats.RejectedLogs; n > 0 {
			fmt.Fprintf(f.Out, "; rejected %d", n)
		}
		if n := res.Stats.Throttled; n > 0 {
			fmt.Fprintf(f.Out, "; %d exports pushed back", n)
		}
		fmt.Fprintln(f.Out)
		if res.Forward != nil {
			fmt.Fprintf(f.Out, "forwarded %d exports to %s (%d failed, %d dropped)\n", res.Forward.Sent, res.Forward.URL, res.Forward.Failed, res.Forward.Dropped)
		}
	}
	if serveErr != nil {
		return serveErr
	}
	if cerr != nil {
		return fmt.Errorf("collect: seal the sessions: %w", cerr)
	}
	return nil
}

func isOff(addr string) bool { return addr == "" || strings.EqualFold(addr, "off") }

func sessionCount(sink collect.Sink) int {
	if c, ok := sink.(collect.SessionCounter); ok {
		return c.Sessions()
	}
	return 0
}

// collectProgress prints sessions and spans/s to stderr: a line rewritten
// every second on a terminal, else a line every opts.ProgressEvery while
// something changes (none with --json). It returns its stop.
func collectProgress(f *Factory, opts *collectOptions, srv *collect.Server, sink collect.Sink, began time.Time) func() {
	tty := false
	if file, ok := f.Err.(*os.File); ok && term.IsTerminal(int(file.Fd())) {
		tty = true
	}
	every := opts.ProgressEvery
	if tty {
		every = time.Second
	}
	if every <= 0 || (opts.JSON && !tty) {
		return func() {}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		last, lastAt := int64(-1), began
		for {
			select {
			case <-stop:
				if tty {
					fmt.Fprintln(f.Err)
				}
				return
			case now := <-t.C:
				st := srv.Stats()
				if st.Spans == last && !tty {
					continue
				}
				rate := 0.0
				if last >= 0 {
					rate = float64(st.Spans-last) / now.Sub(lastAt).Seconds()
				} else {
					rate = float64(st.Spans) / now.Sub(began).Seconds()
				}
				line := fmt.Sprintf("collect: %d sessions, %d spans (%.0f/s), %d log records, %d rejected, %d pushed back",
					sessionCount(sink), st.Spans, rate, st.LogRecords, st.RejectedSpans+st.RejectedLogs, st.Throttled)
				if tty {
					fmt.Fprintf(f.Err, "\r\033[K%s", line)
				} else {
					fmt.Fprintln(f.Err, line)
				}
				last, lastAt = st.Spans, now
			}
		}
	}()
	return func() { close(stop); <-done }
}
