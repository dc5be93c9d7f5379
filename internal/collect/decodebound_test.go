package collect

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/agentctl/agentctl/internal/otelsession"
	"github.com/agentctl/agentctl/internal/recorder"
)

// rawCodec sends bytes as they are over gRPC, so a test can send an
// export no SDK would build.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error)      { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error { return nil }
func (rawCodec) Name() string                       { return "proto" }

// peakHeap runs fn and returns how far the heap grew above where it was
// while fn ran, sampled every millisecond.
func peakHeap(fn func()) uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	if peak.Load() < base {
		return 0
	}
	return peak.Load() - base
}

// TestDecodeBounded: an export of a million empty messages (2 MiB, 70 KiB
// gzipped, 130 MB and more once decoded) is refused on every path before
// it is decoded, and the collector's heap does not grow by more than a
// small part of that meanwhile.
func TestDecodeBounded(t *testing.T) {
	const n = 1 << 20
	empty := bytes.Repeat(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), nil), n) // resource_spans / resource_logs {}
	emptyJSON := func(field string) []byte {
		return []byte(`{"` + field + `":[` + strings.TrimSuffix(strings.Repeat("{},", n/2), ",") + `]}`)
	}
	deep := func() []byte {
		v := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("x"))
		for range otelsession.MaxDepth {
			inner := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), v)
			v = protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), inner)
		}
		kv := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("k"))
		kv = protowire.AppendBytes(protowire.AppendTag(kv, 2, protowire.BytesType), v)
		span := protowire.AppendBytes(protowire.AppendTag(nil, 9, protowire.BytesType), kv)
		ss := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), span)
		rs := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), ss)
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), rs)
	}()
	const limit = 32 << 20
	in, err := otelsession.NewIngester(recorder.Store{Root: t.TempDir()}, otelsession.Options{Source: "collect", NoBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	srv := newServer(t, Config{Sink: in, MaxInflightBytes: limit})
	httpAddr, grpcAddr := start(t, srv)
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{}), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, tc := range []struct {
		name, path, ct, enc string
		body                []byte
		want                []int // HTTP status; for gRPC codes as ints
	}{
		{"http protobuf traces", "/v1/traces", ctProtobuf, "", empty, []int{413}},
		{"http protobuf logs", "/v1/logs", ctProtobuf, "", empty, []int{413}},
		{"http protobuf gzip logs", "/v1/logs", ctProtobuf, "gzip", gz(empty), []int{413}},
		{"http json traces", "/v1/traces", ctJSON, "", emptyJSON("resourceSpans"), []int{413}},
		{"http json logs", "/v1/logs", ctJSON, "", emptyJSON("resourceLogs"), []int{413}},
		{"http too deep", "/v1/traces", ctProtobuf, "", deep, []int{400}},
		{"grpc traces", "/opentelemetry.proto.collector.trace.v1.TraceService/Export", "", "", empty, []int{int(codes.ResourceExhausted)}},
		{"grpc logs", "/opentelemetry.proto.collector.logs.v1.LogsService/Export", "", "", empty, []int{int(codes.ResourceExhausted)}},
		{"grpc too deep", "/opentelemetry.proto.collector.trace.v1.TraceService/Export", "", "", deep, []int{int(codes.InvalidArgument)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got int
			var msg string
			grew := peakHeap(func() {
				if strings.HasPrefix(tc.name, "grpc") {
					var out []byte
					err := conn.Invoke(context.Background(), tc.path, &tc.body, &out)
					got, msg = int(status.Code(err)), status.Convert(err).Message()
					return
				}
				resp, out := post(t, "http://"+httpAddr+tc.path, tc.ct, tc.enc, tc.body, nil)
				got, msg = resp.StatusCode, string(out)
			})
			if got != tc.want[0] {
				t.Errorf("answered %d %q, want %d", got, msg, tc.want[0])
			}
			if grew > limit {
				t.Errorf("the heap grew by %d MiB serving it, over the %d MiB in-flight limit", grew>>20, limit>>20)
			}
			t.Logf("answered %d (%s); heap grew %d MiB", got, msg, grew>>20)
		})
	}
	if st := srv.Stats(); st.InflightBytes != 0 {
		t.Errorf("%d bytes left reserved", st.InflightBytes)
	}
	// A real export still goes through both ways.
	body := exportBody(t, stubs(51, 20))
	if resp, out := post(t, "http://"+httpAddr+"/v1/traces", ctProtobuf, "", body, nil); resp.StatusCode != 200 {
		t.Errorf("a real export over HTTP: %s %s", resp.Status, out)
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(exportBody(t, stubs(52, 20)), req); err != nil {
		t.Fatal(err)
	}
	c2, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := coltracepb.NewTraceServiceClient(c2).Export(context.Background(), req); err != nil {
		t.Errorf("a real export over gRPC: %v", err)
	}
	if _, err := collogspb.NewLogsServiceClient(c2).Export(context.Background(), &collogspb.ExportLogsServiceRequest{}); err != nil {
		t.Errorf("an empty logs export over gRPC: %v", err)
	}
}
