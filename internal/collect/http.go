package collect

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agentctl/agentctl/internal/clip"
	"github.com/agentctl/agentctl/internal/loopback"
	"github.com/agentctl/agentctl/internal/otelsession"
)

// Content types OTLP/HTTP speaks.
const (
	ctProtobuf = "application/x-protobuf"
	ctJSON     = "application/json"
)

// httpError is a failed export: its status code and the message the
// exporter logs.
type httpError struct {
	code  int
	msg   string
	retry time.Duration // Retry-After of a 429 or 503; 0: Config.RetryAfter
}

// drainFactor bounds what is read of a refused request's body, in
// MaxRequestBytes: past it the connection is closed unread.
const drainFactor = 4

// ServeHTTP answers POST /v1/traces and /v1/logs.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ct := ctProtobuf
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && mt == ctJSON {
		ct = ctJSON // errors are answered in the request's encoding where it has one
	}
	// The body's deadlines: no byte for StallTimeout, or not whole by
	// ReadTimeout, cuts the upload, and what it reserved is released.
	body := &deadlineBody{rc: http.NewResponseController(w), r: r.Body, stall: s.cfg.StallTimeout, by: time.Now().Add(s.cfg.ReadTimeout)}
	r.Body = body
	if herr := s.serveHTTP(w, r); herr != nil {
		switch herr.code {
		case http.StatusTooManyRequests:
			s.stats.throttled.Add(1)
		case http.StatusServiceUnavailable:
			s.stats.sinkErrors.Add(1)
		default:
			s.stats.invalid.Add(1)
		}
		if herr.code == http.StatusTooManyRequests || herr.code == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", strconv.Itoa(s.retryAfterSeconds(herr.retry)))
		}
		// An answer before the body is read is a broken pipe to an
		// exporter still writing it (it reports a network error, not
		// our status, and retries the same export): read the rest,
		// without keeping it and under the body's deadlines, unless the
		// upload stalled or says it is far over the limit. A 413 is
		// read too, so the exporter drops the batch instead of retrying
		// it.
		drain := drainFactor * s.cfg.MaxRequestBytes
		if body.err == nil && r.ContentLength <= drain {
			io.Copy(io.Discard, io.LimitReader(r.Body, drain+1))
		}
		if body.err != nil || r.ContentLength > s.cfg.MaxRequestBytes {
			w.Header().Set("Connection", "close")
		}
		writeStatus(w, ct, herr.code, herr.msg)
	}
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) *httpError {
	var g signal
	switch r.URL.Path {
	case "/v1/traces":
		g = traces
	case "/v1/logs":
		g = logs
	case "/v1/metrics":
		return &httpError{code: http.StatusNotFound, msg: "agentctl collect takes traces and logs, not metrics: point only the traces and logs exporters here (OTEL_METRICS_EXPORTER=none, or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT elsewhere)"}
	default:
		return &httpError{code: http.StatusNotFound, msg: fmt.Sprintf("agentctl collect: no %s here: OTLP/HTTP exports go to /v1/traces and /v1/logs", clip.Bytes(r.URL.Path, 100))}
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return &httpError{code: http.StatusMethodNotAllowed, msg: "agentctl collect: " + g.path() + " takes POST"}
	}
	if herr := s.authorize(r); herr != nil {
		return herr
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || (mt != ctProtobuf && mt != ctJSON) {
		return &httpError{code: http.StatusUnsupportedMediaType, msg: fmt.Sprintf("agentctl collect: Content-Type %q: want application/x-protobuf or application/json", clip.Bytes(r.Header.Get("Content-Type"), 100))}
	}
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	if enc != "" && enc != "identity" && enc != "gzip" {
		return &httpError{code: http.StatusUnsupportedMediaType, msg: fmt.Sprintf("agentctl collect: Content-Encoding %q: want gzip or none", clip.Bytes(enc, 100))}
	}
	if r.ContentLength > s.cfg.MaxRequestBytes {
		return s.tooLarge("is", r.ContentLength, s.cfg.MaxRequestBytes)
	}

	// Reserve the wire bytes before reading them: the length sent, or the
	// limit when the body is chunked, cut to what came once it is read.
	reserved := r.ContentLength
	if reserved < 0 {
		reserved = s.cfg.MaxRequestBytes
	}
	if !s.budget.tryAcquire(reserved) {
		return s.throttle(0)
	}
	defer func() { s.budget.release(reserved) }()
	body, err := readBody(r, s.cfg.MaxRequestBytes)
	if err == nil && s.cfg.Forward == nil {
		// Nothing keeps the bytes past this request (a WireSink copies
		// them into its spool; a forward would keep them): the buffer
		// goes back for the next one, sparing the collector a garbage
		// collection every few exports.
		defer putBody(body)
	}
	if err != nil {
		if isTimeout(err) {
			return &httpError{code: http.StatusRequestTimeout, msg: fmt.Sprintf("agentctl collect: the request body stalled (nothing for %s, or not whole in %s): cut", s.cfg.StallTimeout, s.cfg.ReadTimeout)}
		}
		return &httpError{code: http.StatusBadRequest, msg: "agentctl collect: read the request body: " + err.Error()}
	}
	if int64(len(body)) > s.cfg.MaxRequestBytes {
		return s.tooLarge("is", int64(len(body)), s.cfg.MaxRequestBytes)
	}
	s.budget.release(reserved - int64(len(body)))
	reserved = int64(len(body))

	raw := body
	if enc == "gzip" {
		raw, err = gunzip(body, s.cfg.MaxDecodedBytes)
		if err != nil {
			if errors.Is(err, errTooLarge) {
				return s.tooLarge("decompresses to", s.cfg.MaxDecodedBytes+1, s.cfg.MaxDecodedBytes)
			}
			return &httpError{code: http.StatusBadRequest, msg: "agentctl collect: Content-Encoding gzip: " + err.Error()}
		}
	}
	// What decoding will build, counted on the bytes before anything is
	// decoded (empty messages cost fifty times their bytes), and for
	// gzip the plain bytes.
	var more int64
	if mt == ctJSON {
		more, err = otelsession.JSONDecodeCost(raw)
	} else {
		more, err = otelsession.DecodeCost(g.String(), raw)
	}
	if err != nil {
		return &httpError{code: http.StatusBadRequest, msg: "agentctl collect: " + g.path() + ": " + clip.Bytes(err.Error(), 500)}
	}
	if enc == "gzip" {
		more += int64(len(raw))
	}
	if more > s.cfg.MaxInflightBytes {
		return s.tooLarge("decodes to", more, s.cfg.MaxInflightBytes)
	}
	if !s.budget.tryAcquire(more) {
		return s.throttle(0)
	}
	reserved += more

	s.stats.requests.Add(1)
	var (
		res  otelsession.Result
		resp proto.Message
	)
	switch g {
	case traces:
		if ws, ok := s.cfg.Sink.(WireSink); ok && mt != ctJSON {
			res, err = ws.TracesWire(r.Context(), raw)
			if errors.Is(err, otelsession.ErrMalformed) {
				return &httpError{code: http.StatusBadRequest, msg: "agentctl collect: " + g.path() + ": " + clip.Bytes(err.Error(), 500)}
			}
		} else {
			req, derr := decodeTraces(raw, mt)
			if derr != nil {
				return &httpError{code: http.StatusBadRequest, msg: "agentctl collect: " + g.path() + ": " + derr.Error()}
			}
			res, err = s.cfg.Sink.Traces(r.Context(), req)
		}
		if err == nil {
			resp = traceResponse(res)
		}
	case logs:
		req, derr := decodeLogs(raw, mt)
		if derr != nil {
			return &httpError{code: http.StatusBadRequest, msg: "agentctl collect: " + g.path() + ": " + derr.Error()}
		}
		if ws, ok := s.cfg.Sink.(WireSink); ok && mt != ctJSON {
			res, err = ws.LogsWire(r.Context(), req, raw)
		} else {
			res, err = s.cfg.Sink.Logs(r.Context(), req)
		}
		if err == nil {
			resp = logsResponse(res)
		}
	}
	if errors.Is(err, ErrBusy) {
		return s.throttle(retryAfter(err))
	}
	if err != nil {
		if r.Context().Err() == nil && !errors.Is(err, otelsession.ErrWritesFailing) { // that one the Sink said once
			s.cfg.Logf("agentctl collect: %s export not stored (the exporter will retry): %v", g, err)
		}
		return &httpError{code: http.StatusServiceUnavailable, msg: fmt.Sprintf("agentctl collect: %s not stored, retry: %v", g, err)}
	}
	s.account(g, res)
	if s.cfg.Forward != nil {
		s.cfg.Forward.Enqueue(g, mt, enc, body)
	}
	out, err := encode(resp, mt)
	if err != nil {
		return &httpError{code: http.StatusInternalServerError, msg: "agentctl collect: encode the response: " + err.Error()}
	}
	w.Header().Set("Content-Type", mt)
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	w.Write(out)
	return nil
}

// authorize checks the token, or without one that no web page sent r.
func (s *Server) authorize(r *http.Request) *httpError {
	if s.cfg.Token == "" {
		if why := loopback.BrowserRequest(r); why != "" {
			return &httpError{code: http.StatusForbidden, msg: "agentctl collect: refused: " + why +
				"; a collector without a token serves only programs on this machine: start it with --token and send Authorization: Bearer TOKEN"}
		}
		return nil
	}
	got := r.Header.Get("X-Agentctl-Token")
	if a := r.Header.Get("Authorization"); got == "" && len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		got = strings.TrimSpace(a[7:])
	}
	if !loopback.TokenOK(got, s.cfg.Token) {
		return &httpError{code: http.StatusUnauthorized, msg: "agentctl collect: this collector needs its token: set OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20TOKEN (or send X-Agentctl-Token)"}
	}
	return nil
}

// throttle is back-pressure, retry (0: Config.RetryAfter) from now.
func (s *Server) throttle(retry time.Duration) *httpError {
	return &httpError{code: http.StatusTooManyRequests, retry: retry,
		msg: fmt.Sprintf("agentctl collect: busy (exports in flight over %d MiB, or spans waiting to be written): retry after %d s", s.cfg.MaxInflightBytes>>20, s.retryAfterSeconds(retry))}
}

func (s *Server) tooLarge(what string, n, limit int64) *httpError {
	return &httpError{code: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("agentctl collect: the request %s %d bytes or more, over the %d-byte limit: export smaller batches (OTEL_BSP_MAX_EXPORT_BATCH_SIZE) or raise the collector's limit", what, n, limit)}
}

// deadlineBody is a request body read under deadlines: each Read must
// bring something within stall, and the whole body come by by.
type deadlineBody struct {
	rc    *http.ResponseController
	r     io.ReadCloser
	stall time.Duration
	by    time.Time
	err   error // a read that failed other than at the end (a timeout)
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	d := time.Now().Add(b.stall)
	if d.After(b.by) {
		d = b.by
	}
	b.rc.SetReadDeadline(d) // where not supported (HTTP/2), none
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

func (b *deadlineBody) Close() error { return b.r.Close() }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// errTooLarge: the gzip stream inflates past the limit.
var errTooLarge = errors.New("collect: decompressed body over the limit")

// gunzip inflates b, refusing to produce more than limit bytes.
func gunzip(b []byte, limit int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(out)) > limit {
		return nil, errTooLarge
	}
	return out, nil
}

// bodies are request buffers to read into again.
var bodies sync.Pool

// readBody reads the body whole, up to one byte past limit, into one
// buffer of the length sent (io.ReadAll would grow it by copies), from
// bodies when one there is large enough.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength < 0 || r.ContentLength > limit {
		return io.ReadAll(io.LimitReader(r.Body, limit+1))
	}
	var buf []byte
	if p, ok := bodies.Get().(*[]byte); ok && int64(cap(*p)) >= r.ContentLength {
		buf = (*p)[:r.ContentLength]
	} else {
		buf = make([]byte, r.ContentLength)
	}
	if _, err := io.ReadFull(r.Body, buf); err != nil {
		return nil, err
	}
	// A body longer than its Content-Length is the server's to refuse;
	// net/http stops at the length.
	return buf, nil
}

func putBody(b []byte) {
	if cap(b) > 0 && cap(b) <= 64<<20 {
		bodies.Put(&b)
	}
}

func decodeTraces(b []byte, mt string) (*coltracepb.ExportTraceServiceRequest, error) {
	if mt == ctJSON {
		req, err := otelsession.DecodeTracesJSON(b)
		if err != nil {
			return nil, fmt.Errorf("not an OTLP JSON request: %s", clip.Bytes(err.Error(), 500))
		}
		return req, nil
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		return nil, fmt.Errorf("not an OTLP protobuf request: %w", err)
	}
	return req, nil
}

func decodeLogs(b []byte, mt string) (*collogspb.ExportLogsServiceRequest, error) {
	if mt == ctJSON {
		req, err := otelsession.DecodeLogsJSON(b)
		if err != nil {
			return nil, fmt.Errorf("not an OTLP JSON request: %s", clip.Bytes(err.Error(), 500))
		}
		return req, nil
	}
	req := &collogspb.ExportLogsServiceRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		return nil, fmt.Errorf("not an OTLP protobuf request: %w", err)
	}
	return req, nil
}

// encode writes a response in the request's encoding (OTLP JSON's hex
// ids do not arise: responses carry none).
func encode(m proto.Message, mt string) ([]byte, error) {
	if mt == ctJSON {
		return protojson.Marshal(m)
	}
	return proto.Marshal(m)
}

// writeStatus answers a failed export with a google.rpc.Status, as the
// OTLP/HTTP specification asks, in the request's encoding.
func writeStatus(w http.ResponseWriter, ct string, code int, msg string) {
	st := &statuspb.Status{Code: int32(grpcCode(code)), Message: msg}
	b, err := encode(st, ct)
	if err != nil {
		ct, b = "text/plain; charset=utf-8", []byte(msg)
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	w.Write(b)
}

// grpcCode is the google.rpc.Code of an HTTP failure.
func grpcCode(httpCode int) codes.Code {
	switch httpCode {
	case http.StatusBadRequest:
		return codes.InvalidArgument
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusUnsupportedMediaType:
		return codes.Unimplemented
	case http.StatusRequestEntityTooLarge, http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case http.StatusServiceUnavailable:
		return codes.Unavailable
	case http.StatusRequestTimeout:
		return codes.DeadlineExceeded
	}
	return codes.Internal
}

func traceResponse(res otelsession.Result) *coltracepb.ExportTraceServiceResponse {
	resp := &coltracepb.ExportTraceServiceResponse{}
	if len(res.Rejected) > 0 {
		resp.PartialSuccess = &coltracepb.ExportTracePartialSuccess{
			RejectedSpans: int64(len(res.Rejected)), ErrorMessage: rejectionMessage(traces, res.Rejected)}
	}
	return resp
}

func logsResponse(res otelsession.Result) *collogspb.ExportLogsServiceResponse {
	resp := &collogspb.ExportLogsServiceResponse{}
	if len(res.Rejected) > 0 {
		resp.PartialSuccess = &collogspb.ExportLogsPartialSuccess{
			RejectedLogRecords: int64(len(res.Rejected)), ErrorMessage: rejectionMessage(logs, res.Rejected)}
	}
	return resp
}
