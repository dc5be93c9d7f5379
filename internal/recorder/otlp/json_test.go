package otlp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentctl/agentctl/internal/session"
)

// encodeWhole is the request as one value, encoded at once: what WriteJSON
// wrote before it wrote a span at a time, kept as the reference its bytes
// are compared with.
func encodeWhole(spans tracetest.SpanStubs) []byte {
	req := jsonRequest{ResourceSpans: []jsonResourceSpans{}}
	type key struct{ res, scope string }
	idx := map[key][2]int{}
	for _, s := range spans {
		rk, schema := "", ""
		var rattrs []attribute.KeyValue
		if s.Resource != nil {
			rk, rattrs, schema = s.Resource.Encoded(attribute.DefaultEncoder()), s.Resource.Attributes(), s.Resource.SchemaURL()
		}
		k := key{rk, s.InstrumentationScope.Name + "\x00" + s.InstrumentationScope.Version}
		at, ok := idx[k]
		if !ok {
			ri := -1
			for kk, v := range idx {
				if kk.res == rk {
					ri = v[0]
					break
				}
			}
			if ri < 0 {
				req.ResourceSpans = append(req.ResourceSpans, jsonResourceSpans{Resource: jsonResource{Attributes: jsonAttrs(rattrs)}, SchemaURL: schema})
				ri = len(req.ResourceSpans) - 1
			}
			rs := &req.ResourceSpans[ri]
			rs.ScopeSpans = append(rs.ScopeSpans, jsonScopeSpans{Scope: jsonScope{Name: s.InstrumentationScope.Name, Version: s.InstrumentationScope.Version}})
			at = [2]int{ri, len(rs.ScopeSpans) - 1}
			idx[k] = at
		}
		ss := &req.ResourceSpans[at[0]].ScopeSpans[at[1]]
		ss.Spans = append(ss.Spans, jsonSpanOf(s))
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(req); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// WriteJSON writes the bytes the whole request encoded at once has: for a
// real session's spans, for none, and for spans of two resources and two
// scopes interleaved (grouped by first appearance).
func TestWriteJSONBytes(t *testing.T) {
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "a<b>&"))
	mixed := Spans("s1", twoRuns(), Options{Resource: res, CaptureContent: true})
	other := resource.NewSchemaless(attribute.String("service.name", "other"))
	for i := range mixed {
		switch i % 3 {
		case 1:
			mixed[i].Resource = other
		case 2:
			mixed[i].InstrumentationScope = instrumentation.Scope{Name: "second", Version: "1.0"}
		}
	}
	tests := []struct {
		name  string
		spans tracetest.SpanStubs
	}{
		{"none", nil},
		{"session", Spans("s1", twoRuns(), Options{Resource: res, CaptureContent: true})},
		{"no resource", Spans("s1", twoRuns(), Options{})},
		{"two resources and scopes", mixed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got bytes.Buffer
			if err := WriteJSON(&got, tt.spans); err != nil {
				t.Fatal(err)
			}
			if want := encodeWhole(tt.spans); !bytes.Equal(got.Bytes(), want) {
				t.Errorf("WriteJSON wrote\n%s\nwant\n%s", got.Bytes(), want)
			}
		})
	}
}

// heapPeak is an io.Writer that records the largest live heap seen at
// its writes (after a collection), every 64th write.
type heapPeak struct {
	n, size int
	peak    uint64
}

func (h *heapPeak) Write(p []byte) (int, error) {
	h.size += len(p)
	if h.n++; h.n%64 == 1 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		h.peak = max(h.peak, ms.HeapAlloc)
	}
	return len(p), nil
}

// WriteJSON holds a span's JSON at a time, not the request's: a bundle's
// trace.json of a long session was the whole document in one buffer
// (1.3 GB at a million events), on top of the spans. Its live heap beyond
// the spans it is given stays under a tenth of what it writes.
func TestWriteJSONHoldsNotTheDocument(t *testing.T) {
	long := longSession()
	spans := Spans("s1", long, Options{CaptureContent: true})
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	h := &heapPeak{}
	if err := WriteJSON(h, spans); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(spans)
	grew := int64(h.peak) - int64(before.HeapAlloc)
	t.Logf("%d spans, %d bytes written, live heap grew by at most %d bytes", len(spans), h.size, grew)
	if grew > int64(h.size/10) {
		t.Errorf("the live heap grew by %d bytes writing %d bytes of JSON: more than a tenth of the document is held", grew, h.size)
	}
}

// WriteSessionJSON holds the spans still open, not the session's: its
// live heap beyond the events stays under a tenth of what it writes.
func TestWriteSessionJSONHoldsNotTheSpans(t *testing.T) {
	long := longSession()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	h := &heapPeak{}
	each := func(fn func(session.Event)) {
		for _, e := range long {
			fn(e)
		}
	}
	if err := WriteSessionJSON(h, "s1", each, Options{CaptureContent: true}); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(long)
	grew := int64(h.peak) - int64(before.HeapAlloc)
	t.Logf("%d events, %d bytes written, live heap grew by at most %d bytes", len(long), h.size, grew)
	if grew > int64(h.size/10) {
		t.Errorf("the live heap grew by %d bytes writing %d bytes of JSON: the spans are held", grew, h.size)
	}
}

// longSession is twoRuns' first run 2,000 times over, each time with calls
// of their own.
func longSession() []session.Event {
	var evs []session.Event
	for _, e := range twoRuns() {
		if e.Kind != session.KindSessionFinished {
			evs = append(evs, e)
		}
	}
	var long []session.Event
	for i := range 2000 {
		for _, e := range evs[1:] {
			e.Seq = int64(len(long) + 2)
			e.CallID = fmt.Sprintf("%s-%d", e.CallID, i)
			long = append(long, e)
		}
	}
	return append([]session.Event{evs[0]}, long...)
}

// WriteSessionJSON, the spans written as the events come, writes what
// WriteJSON writes of the session's spans built whole.
func TestWriteSessionJSONIsWriteJSON(t *testing.T) {
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "agent"))
	running := twoRuns()[:9] // a run still going: its invocation ends at close
	tests := []struct {
		name string
		evs  []session.Event
		opts Options
	}{
		{"session", twoRuns(), Options{Resource: res, CaptureContent: true}},
		{"no options", twoRuns(), Options{}},
		{"running", running, Options{Resource: res}},
		{"no events", nil, Options{Resource: res}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want, got bytes.Buffer
			if err := WriteJSON(&want, Spans("s1", tt.evs, tt.opts)); err != nil {
				t.Fatal(err)
			}
			each := func(fn func(session.Event)) {
				for _, e := range tt.evs {
					fn(e)
				}
			}
			if err := WriteSessionJSON(&got, "s1", each, tt.opts); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("WriteSessionJSON wrote\n%s\nwant\n%s", got.Bytes(), want.Bytes())
			}
		})
	}
}
