package collect

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/agentctl/agentctl/internal/otelsession"
	"github.com/agentctl/agentctl/internal/testenv"
)

// count is the spans or log records of one capture file, decoded as the
// Sink will see them.
func count(t *testing.T, path string) (traces bool, n int, tr *coltracepb.ExportTraceServiceRequest, lg *collogspb.ExportLogsServiceRequest) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	traces = strings.Contains(filepath.Base(path), "-traces.")
	json := strings.HasSuffix(path, ".json")
	switch {
	case traces && json:
		tr, err = otelsession.DecodeTracesJSON(b)
	case traces:
		tr = &coltracepb.ExportTraceServiceRequest{}
		err = proto.Unmarshal(b, tr)
	case json:
		lg, err = otelsession.DecodeLogsJSON(b)
	default:
		lg = &collogspb.ExportLogsServiceRequest{}
		err = proto.Unmarshal(b, lg)
	}
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, rs := range tr.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	for _, rl := range lg.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			n += len(sl.GetLogRecords())
		}
	}
	return traces, n, tr, lg
}

// The npm emitters' real exports (testdata/otel: the OTel JS SDK's
// exporters around five instrumentations), replayed as they were sent:
// HTTP protobuf bodies as protobuf (and gzipped, as
// OTEL_EXPORTER_OTLP_COMPRESSION=gzip sends them), HTTP JSON bodies as
// JSON, gRPC messages over gRPC. Every span and log record reaches the
// sink, each id intact.
func TestCaptures(t *testing.T) {
	root := filepath.Join(testenv.Root(), "testdata", "otel")
	runs, err := filepath.Glob(filepath.Join(root, "*", "*"))
	if err != nil || len(runs) < 20 {
		t.Fatalf("captures under %s: %d runs (%v), want the five emitters' runs", root, len(runs), err)
	}
	mem := &Memory{}
	srv := newServer(t, Config{Sink: mem})
	httpAddr, grpcAddr := start(t, srv)
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	wantSpans, wantLogs := map[string]bool{}, 0
	files := 0
	for _, run := range runs {
		fi, err := os.Stat(run)
		if err != nil || !fi.IsDir() {
			continue
		}
		names, _ := filepath.Glob(filepath.Join(run, "[0-9][0-9][0-9]-*"))
		sort.Strings(names)
		for _, path := range names {
			files++
			name := strings.TrimPrefix(path, root+"/")
			isTraces, n, tr, lg := count(t, path)
			body, _ := os.ReadFile(path)
			sig := "/v1/logs"
			if isTraces {
				sig = "/v1/traces"
				for _, k := range spanKeysOf(tr) {
					wantSpans[k] = true
				}
			} else {
				wantLogs += n
			}
			before := srv.Stats()
			switch {
			case filepath.Base(run) == "grpc" && isTraces:
				_, err = coltracepb.NewTraceServiceClient(conn).Export(context.Background(), tr)
			case filepath.Base(run) == "grpc":
				_, err = collogspb.NewLogsServiceClient(conn).Export(context.Background(), lg)
			case strings.HasSuffix(path, ".json"):
				if resp, out := post(t, "http://"+httpAddr+sig, ctJSON, "", body, nil); resp.StatusCode != 200 {
					t.Errorf("%s: %s %s", name, resp.Status, out)
				}
			default:
				if resp, out := post(t, "http://"+httpAddr+sig, ctProtobuf, "", body, nil); resp.StatusCode != 200 {
					t.Errorf("%s: %s %s", name, resp.Status, out)
				}
				if resp, out := post(t, "http://"+httpAddr+sig, ctProtobuf, "gzip", gz(body), nil); resp.StatusCode != 200 {
					t.Errorf("%s gzipped: %s %s", name, resp.Status, out)
				}
			}
			if err != nil {
				t.Errorf("%s over gRPC: %v", name, err)
			}
			after := srv.Stats()
			got := after.Spans - before.Spans + after.LogRecords - before.LogRecords
			copies := int64(1)
			if filepath.Base(run) != "grpc" && !strings.HasSuffix(path, ".json") {
				copies = 2
			}
			if got != copies*int64(n) {
				t.Errorf("%s: the sink took %d records, want %d", name, got, copies*int64(n))
			}
		}
	}
	for k := range wantSpans {
		if mem.Deliveries(k) == 0 {
			t.Errorf("span %s of the captures never reached the sink", k)
		}
	}
	if len(mem.Spans()) != len(wantSpans) {
		t.Errorf("the sink has %d distinct spans, the captures %d", len(mem.Spans()), len(wantSpans))
	}
	t.Logf("%d capture files, %d distinct spans, %d log records", files, len(wantSpans), wantLogs)
}

func spanKeysOf(req *coltracepb.ExportTraceServiceRequest) []string {
	var out []string
	m := &Memory{}
	m.Traces(context.Background(), req)
	out = append(out, m.Spans()...)
	return out
}
