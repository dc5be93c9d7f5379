package otelsession

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// wireCorpus is protobuf trace exports to read both ways: every real
// capture, a request with every string field set (fill), and requests
// whose attributes straddle the size limit and name their sessions.
func wireCorpus(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, em := range emitters {
		for _, proto := range []string{"http-protobuf", "grpc"} {
			for _, e := range loadCapture(t, filepath.Join(captures, em.name, proto)) {
				if e.wire != nil {
					out[em.name+"/"+proto+"/"+e.name] = e.wire
				}
			}
		}
	}
	full := &coltracepb.ExportTraceServiceRequest{}
	fill(full.ProtoReflect(), "session-value", 0, 8)
	b, err := proto.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	out["filled"] = b
	base := loadCapture(t, filepath.Join(captures, "vercel-genai", "http-protobuf"))
	for _, e := range base {
		if e.traces == nil {
			continue
		}
		m := proto.Clone(e.traces).(*coltracepb.ExportTraceServiceRequest)
		for i, rs := range m.GetResourceSpans() {
			rs.Resource.Attributes = append(rs.Resource.Attributes, &commonpb.KeyValue{Key: "session.id", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(i)}}})
			for _, ss := range rs.GetScopeSpans() {
				for j, s := range ss.GetSpans() {
					v := strings.Repeat("x", 1000+j%3*10) // 1000, 1010, 1020 bytes: around the test limit
					s.Attributes = append(s.Attributes,
						&commonpb.KeyValue{Key: "big", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{{Value: &commonpb.AnyValue_StringValue{StringValue: v}}, {Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}}}}}},
						&commonpb.KeyValue{Key: "kv", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{{Key: "a"}, {Key: "b", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte(v)}}}}}}}},
						&commonpb.KeyValue{Key: "gen_ai.conversation.id", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "conv-" + string(rune('a'+j%2))}}})
					if j%4 == 0 {
						s.Events = append(s.Events, &tracepb.Span_Event{Name: "ev", Attributes: []*commonpb.KeyValue{{Key: "payload", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v + v}}}}})
					}
				}
			}
		}
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out["limits/"+e.name] = b
	}
	return out
}

// TestScanMatchesDecode: reading an export from its bytes gives the
// records decoding it gives (keys, groups, refusals and their reasons),
// and each span, once expanded, is the span decoding makes.
func TestScanMatchesDecode(t *testing.T) {
	for _, limit := range []int{0, 1015} {
		opts := Options{MaxAttrBytes: limit}.withDefaults()
		for name, b := range wireCorpus(t) {
			req := &coltracepb.ExportTraceServiceRequest{}
			if err := proto.Unmarshal(b, req); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			want := traceRecords(req, opts)
			got, err := traceRecordsWire(b, opts, func([]byte) bool { return false })
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !reflect.DeepEqual(got.keys, want.keys) || !reflect.DeepEqual(got.groups, want.groups) || !reflect.DeepEqual(got.rejected, want.rejected) {
				t.Errorf("%s (limit %d): read from bytes\n keys %v\n groups %v\n rejected %v\ndecoded\n keys %v\n groups %v\n rejected %v",
					name, limit, got.keys, got.groups, got.rejected, want.keys, want.groups, want.rejected)
				continue
			}
			for i := range got.spans {
				a, w := got.spans[i], want.spans[i]
				if a.Start != w.Start || a.End != w.End || sessionKey(a) != sessionKey(w) {
					t.Errorf("%s: span %d before expanding: %v %v %q, want %v %v %q", name, i, a.Start, a.End, sessionKey(a), w.Start, w.End, sessionKey(w))
				}
				a.expand()
				w.expand()
				if !reflect.DeepEqual(a, w) {
					t.Errorf("%s: span %d expanded:\n got %+v\nwant %+v", name, i, a, w)
				}
			}
			if limit > 0 && strings.HasPrefix(name, "limits/") && len(want.rejected) == 0 {
				t.Errorf("%s: nothing over the %d-byte limit: the corpus does not test refusals", name, limit)
			}
		}
	}
}

// TestScanRefusesWhatDecodeRefuses: over bytes damaged at random (a flip,
// a cut, a byte inserted), reading from bytes accepts exactly what
// proto.Unmarshal accepts, so an export acknowledged unread is one its
// trace can be decoded from when written.
func TestScanRefusesWhatDecodeRefuses(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var bodies [][]byte
	for _, b := range wireCorpus(t) {
		bodies = append(bodies, b)
	}
	accepted, refused := 0, 0
	for range 4000 {
		b := bytes.Clone(bodies[rng.IntN(len(bodies))])
		if len(b) == 0 {
			continue
		}
		switch i := rng.IntN(len(b)); rng.IntN(4) {
		case 0:
			b[i] ^= byte(1 << rng.IntN(8))
		case 1:
			b = b[:i]
		case 2:
			b = append(b[:i], append([]byte{byte(rng.IntN(256))}, b[i:]...)...)
		default:
			b[i] = 0xff // an invalid UTF-8 byte, or a runaway varint
		}
		_, serr := traceRecordsWire(b, Options{}.withDefaults(), func([]byte) bool { return false })
		derr := proto.Unmarshal(b, &coltracepb.ExportTraceServiceRequest{})
		if (serr == nil) != (derr == nil) {
			t.Fatalf("read from bytes: %v; decoded: %v (%d bytes)", serr, derr, len(b))
		}
		if serr == nil {
			accepted++
		} else {
			refused++
		}
	}
	if accepted < 100 || refused < 100 {
		t.Errorf("%d accepted, %d refused: the damage does not test both ways", accepted, refused)
	}
}

// TestScanFindsSecrets: a secret in any string of an export, wherever it
// is, makes the spool redact it (holds is shown every string).
func TestScanFindsSecrets(t *testing.T) {
	const secret = "sk-the-secret-value"
	for name, b := range wireCorpus(t) {
		r, err := traceRecordsWire(b, Options{}.withDefaults(), func(s []byte) bool { return bytes.Contains(s, []byte(secret)) })
		if err != nil || r.secret {
			t.Fatalf("%s: secret %v, %v before one is put in", name, r.secret, err)
		}
	}
	full := &coltracepb.ExportTraceServiceRequest{}
	fill(full.ProtoReflect(), secret, 0, 8)
	n := 0
	redactMessage(full.ProtoReflect(), func(s string) string {
		n++
		return s
	})
	// One string at a time holds the secret, the others a harmless text.
	for k := range n {
		m := proto.Clone(full).(*coltracepb.ExportTraceServiceRequest)
		i := 0
		redactMessage(m.ProtoReflect(), func(s string) string {
			i++
			if i-1 == k {
				return s
			}
			return "plain"
		})
		b, _ := proto.Marshal(m)
		r, err := traceRecordsWire(b, Options{}.withDefaults(), func(s []byte) bool { return bytes.Contains(s, []byte(secret)) })
		if err != nil || !r.secret {
			t.Fatalf("string %d of %d holds the secret and the scan did not see it (%v)", k, n, err)
		}
	}
}
