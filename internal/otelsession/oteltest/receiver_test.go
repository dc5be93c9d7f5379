package oteltest_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	grpcgzip "google.golang.org/grpc/encoding/gzip"
	"google.golang.org/protobuf/proto"

	"github.com/agentctl/agentctl/internal/otelsession/oteltest"
)

func oneSpan(name string) *coltrace.ExportTraceServiceRequest {
	return &coltrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8), Name: name,
		}}}},
	}}}
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func TestReceiverHTTP(t *testing.T) {
	pb, err := proto.Marshal(oneSpan("chat gpt-4o"))
	if err != nil {
		t.Fatal(err)
	}
	jsonLogs := []byte(`{"resourceLogs":[]}`)
	big := bytes.Repeat([]byte{'x'}, oteltest.MaxBody+1)
	tests := []struct {
		name, path, ct, enc string
		body                []byte
		wantStatus          int
		wantKept            bool
		wantRespCT          string
	}{
		{"protobuf traces", "/v1/traces", "application/x-protobuf", "", pb, 200, true, "application/x-protobuf"},
		{"gzip protobuf traces", "/v1/traces", "application/x-protobuf", "gzip", gz(t, pb), 200, true, "application/x-protobuf"},
		{"json logs", "/v1/logs", "application/json", "", jsonLogs, 200, true, "application/json"},
		{"broken gzip", "/v1/traces", "application/x-protobuf", "gzip", []byte("not gzip"), 400, false, ""},
		{"unknown encoding", "/v1/traces", "application/x-protobuf", "br", pb, 415, false, ""},
		{"oversized", "/v1/traces", "application/x-protobuf", "", big, 413, false, ""},
		{"gzip bomb", "/v1/traces", "application/x-protobuf", "gzip", gz(t, big), 400, false, ""},
		{"no such signal", "/v1/metrics", "application/x-protobuf", "", pb, 404, false, ""},
	}
	rcv := oteltest.StartReceiver(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rcv.Reset()
			req, _ := http.NewRequest("POST", rcv.Endpoint(oteltest.HTTPProtobuf)+tt.path, bytes.NewReader(tt.body))
			req.Header.Set("Content-Type", tt.ct)
			if tt.enc != "" {
				req.Header.Set("Content-Encoding", tt.enc)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if got := resp.Header.Get("Content-Type"); tt.wantRespCT != "" && got != tt.wantRespCT {
				t.Errorf("response content-type = %q, want %q", got, tt.wantRespCT)
			}
			reqs := rcv.Requests()
			if got := len(reqs) == 1; got != tt.wantKept {
				t.Fatalf("kept %d requests, want kept=%v", len(reqs), tt.wantKept)
			}
			if !tt.wantKept {
				return
			}
			q := reqs[0]
			if !bytes.Equal(q.Body, tt.body) || q.ContentType != tt.ct || q.ContentEncoding != tt.enc || q.Transport != "http" {
				t.Errorf("kept %+v, want the body and headers as sent", q)
			}
			if _, err := q.Decoded(); err != nil {
				t.Errorf("Decoded: %v", err)
			}
		})
	}
}

func TestReceiverGRPC(t *testing.T) {
	rcv := oteltest.StartReceiver(t)
	addr := strings.TrimPrefix(rcv.Endpoint(oteltest.GRPC), "http://")
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	if _, err := coltrace.NewTraceServiceClient(conn).Export(ctx, oneSpan("execute_tool lookup_order"), grpc.UseCompressor(grpcgzip.Name)); err != nil {
		t.Fatal(err)
	}
	if _, err := collogs.NewLogsServiceClient(conn).Export(ctx, &collogs.ExportLogsServiceRequest{}); err != nil {
		t.Fatal(err)
	}
	reqs := rcv.Requests()
	if len(reqs) != 2 || reqs[0].Signal != oteltest.Traces || reqs[1].Signal != oteltest.Logs {
		t.Fatalf("requests = %+v, want traces then logs", reqs)
	}
	if reqs[0].Transport != "grpc" || reqs[0].ContentType != "application/grpc" {
		t.Errorf("kept %+v, want a grpc request", reqs[0])
	}
	var got coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(reqs[0].Body, &got); err != nil {
		t.Fatal(err)
	}
	if n := got.ResourceSpans[0].ScopeSpans[0].Spans[0].Name; n != "execute_tool lookup_order" {
		t.Errorf("span name = %q", n)
	}
}

// TestCommittedCaptures checks testdata/otel without npm: every emitter
// has every run, each with traces and the model server's record, and
// every body decodes as what its name says.
func TestCommittedCaptures(t *testing.T) {
	for _, e := range oteltest.Emitters {
		for _, c := range captureRuns() {
			dir := filepath.Join(capturesDir(), e.Name, c.dir)
			files, err := filepath.Glob(filepath.Join(dir, "*"))
			if err != nil || len(files) == 0 {
				t.Errorf("%s: no capture (go test ./internal/otelsession/oteltest -run TestCaptures -update)", dir)
				continue
			}
			var traces, model bool
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				base := filepath.Base(f)
				switch {
				case base == "model-server.jsonl":
					model = strings.Count(string(b), `"kind":"model_call"`) == 2
				case strings.HasSuffix(base, ".json"):
					var m map[string]json.RawMessage
					if err := json.Unmarshal(b, &m); err != nil {
						t.Errorf("%s: %v", f, err)
					}
					traces = traces || m["resourceSpans"] != nil
				case strings.HasSuffix(base, "-traces.pb"):
					var m coltrace.ExportTraceServiceRequest
					if err := proto.Unmarshal(b, &m); err != nil || len(m.ResourceSpans) == 0 {
						t.Errorf("%s: not OTLP traces (%v)", f, err)
					}
					traces = true
				case strings.HasSuffix(base, "-logs.pb"):
					var m collogs.ExportLogsServiceRequest
					if err := proto.Unmarshal(b, &m); err != nil || len(m.ResourceLogs) == 0 {
						t.Errorf("%s: not OTLP logs (%v)", f, err)
					}
				default:
					t.Errorf("%s: unexpected file", f)
				}
			}
			if !traces || !model {
				t.Errorf("%s: traces %v, model-server.jsonl with 2 calls %v; want both", dir, traces, model)
			}
		}
	}
}
