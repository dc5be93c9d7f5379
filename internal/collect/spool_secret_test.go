package collect

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/agentctl/agentctl/internal/otelsession"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/testenv"
)

// plantedKey is an Anthropic key shape the default redactor knows.
const plantedKey = "sk-ant-api03-Zq8vN3xK1mP0rT5yW7bC9dF2gH4jL6nQ8sU0vX2zA4"

func leakKV() *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: "leak", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "key " + plantedKey}}}
}

// TestSpoolHoldsNoSecret: whatever the export's kind (traces, logs) and
// encoding (protobuf, gzip, JSON over HTTP, gRPC), a key planted in its
// attributes is not on disk while the export waits in the spool (as a
// kill -9 would leave it: nothing drained, nothing closed).
func TestSpoolHoldsNoSecret(t *testing.T) {
	dir := filepath.Join(testenv.Root(), "testdata", "otel", "otel-openai")
	plantPB := func(t *testing.T, path string) proto.Message {
		_, _, tr, lg := count(t, path)
		if tr != nil {
			for _, rs := range tr.GetResourceSpans() {
				rs.Resource.Attributes = append(rs.Resource.Attributes, leakKV())
				for _, ss := range rs.GetScopeSpans() {
					for _, s := range ss.GetSpans() {
						s.Attributes = append(s.Attributes, leakKV())
					}
				}
			}
			return tr
		}
		for _, rl := range lg.GetResourceLogs() {
			rl.Resource.Attributes = append(rl.Resource.Attributes, leakKV())
			for _, sl := range rl.GetScopeLogs() {
				for _, l := range sl.GetLogRecords() {
					l.Attributes = append(l.Attributes, leakKV())
				}
			}
		}
		return lg
	}
	for _, tc := range []struct{ name, run, file string }{
		{"http-protobuf/traces", "http-protobuf", "003-traces.pb"},
		{"http-protobuf/logs", "http-protobuf", "001-logs.pb"},
		{"http-protobuf-gzip/traces", "http-protobuf", "003-traces.pb"},
		{"http-protobuf-gzip/logs", "http-protobuf", "001-logs.pb"},
		{"http-json/traces", "http-json", "002-traces.json"},
		{"http-json/logs", "http-json", "001-logs.json"},
		{"grpc/traces", "grpc", "003-traces.pb"},
		{"grpc/logs", "grpc", "001-logs.pb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			in, err := otelsession.NewIngester(recorder.Store{Root: home}, otelsession.Options{Source: "collect", Settle: time.Hour, NoBackground: true})
			if err != nil {
				t.Fatal(err)
			}
			// Not closed before the check: Close would write the sessions
			// and remove the spool.
			defer in.Close()
			srv := newServer(t, Config{Sink: in})
			httpAddr, grpcAddr := start(t, srv)
			path := filepath.Join(dir, tc.run, tc.file)
			signal := "/v1/logs"
			if strings.Contains(tc.file, "traces") {
				signal = "/v1/traces"
			}
			switch {
			case tc.run == "http-json":
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				b = []byte(strings.ReplaceAll(string(b), `"attributes":[`, `"attributes":[{"key":"leak","value":{"stringValue":"key `+plantedKey+`"}},`))
				if resp, out := post(t, "http://"+httpAddr+signal, ctJSON, "", b, nil); resp.StatusCode != 200 {
					t.Fatalf("export: %s %s", resp.Status, out)
				}
			case tc.run == "http-protobuf":
				b, err := proto.Marshal(plantPB(t, path))
				if err != nil {
					t.Fatal(err)
				}
				enc := ""
				if strings.Contains(tc.name, "gzip") {
					b, enc = gz(b), "gzip"
				}
				if resp, out := post(t, "http://"+httpAddr+signal, ctProtobuf, enc, b, nil); resp.StatusCode != 200 {
					t.Fatalf("export: %s %s", resp.Status, out)
				}
			default:
				conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				switch m := plantPB(t, path).(type) {
				case *coltracepb.ExportTraceServiceRequest:
					_, err = coltracepb.NewTraceServiceClient(conn).Export(context.Background(), m)
				case *collogspb.ExportLogsServiceRequest:
					_, err = collogspb.NewLogsServiceClient(conn).Export(context.Background(), m)
				}
				if err != nil {
					t.Fatalf("export: %v", err)
				}
			}
			if st := srv.Stats(); st.Spans+st.LogRecords == 0 {
				t.Fatalf("nothing accepted: %+v", st)
			}
			spooled := 0
			filepath.Walk(filepath.Join(home, otelsession.SpoolDir), func(p string, fi os.FileInfo, err error) error {
				if err != nil || !fi.Mode().IsRegular() {
					return nil
				}
				b, _ := os.ReadFile(p)
				spooled += len(b)
				if strings.Contains(string(b), plantedKey) {
					t.Errorf("%s holds the planted key", p)
				}
				return nil
			})
			if spooled == 0 {
				t.Errorf("nothing in the spool: the test checked nothing")
			}
		})
	}
}
