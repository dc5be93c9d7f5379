package otlp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentctl/agentctl/internal/session"
)

// The OTLP/JSON form of ExportTraceServiceRequest: lowerCamelCase field
// names, trace and span ids as hex, 64-bit integers as decimal strings and
// enums as numbers (OTLP specification, "JSON Protobuf Encoding").
type (
	jsonRequest struct {
		ResourceSpans []jsonResourceSpans `json:"resourceSpans"`
	}
	jsonResourceSpans struct {
		Resource   jsonResource     `json:"resource"`
		ScopeSpans []jsonScopeSpans `json:"scopeSpans"`
		SchemaURL  string           `json:"schemaUrl,omitempty"`
	}
	jsonResource struct {
		Attributes []jsonKeyValue `json:"attributes"`
	}
	jsonScopeSpans struct {
		Scope jsonScope  `json:"scope"`
		Spans []jsonSpan `json:"spans"`
	}
	jsonScope struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
	}
	jsonSpan struct {
		TraceID           string         `json:"traceId"`
		SpanID            string         `json:"spanId"`
		ParentSpanID      string         `json:"parentSpanId,omitempty"`
		Flags             uint32         `json:"flags,omitempty"`
		Name              string         `json:"name"`
		Kind              int            `json:"kind"`
		StartTimeUnixNano string         `json:"startTimeUnixNano"`
		EndTimeUnixNano   string         `json:"endTimeUnixNano"`
		Attributes        []jsonKeyValue `json:"attributes,omitempty"`
		Events            []jsonEvent    `json:"events,omitempty"`
		Links             []jsonLink     `json:"links,omitempty"`
		Status            jsonStatus     `json:"status"`
	}
	jsonLink struct {
		TraceID    string         `json:"traceId"`
		SpanID     string         `json:"spanId"`
		Attributes []jsonKeyValue `json:"attributes,omitempty"`
		Flags      uint32         `json:"flags,omitempty"`
	}
	jsonEvent struct {
		TimeUnixNano string         `json:"timeUnixNano"`
		Name         string         `json:"name"`
		Attributes   []jsonKeyValue `json:"attributes,omitempty"`
	}
	jsonStatus struct {
		Message string `json:"message,omitempty"`
		Code    int    `json:"code,omitempty"`
	}
	jsonKeyValue struct {
		Key   string    `json:"key"`
		Value jsonValue `json:"value"`
	}
	jsonValue struct {
		StringValue *string     `json:"stringValue,omitempty"`
		BoolValue   *bool       `json:"boolValue,omitempty"`
		IntValue    *string     `json:"intValue,omitempty"`
		DoubleValue *float64    `json:"doubleValue,omitempty"`
		ArrayValue  *jsonValues `json:"arrayValue,omitempty"`
	}
	jsonValues struct {
		Values []jsonValue `json:"values"`
	}
)

// OTLP span flags: the W3C trace flags in the low byte, and bit 8 set
// to say whether the parent is remote is known (it never is here).
const flagContextHasIsRemote = 0x100

// WriteJSON writes spans as one OTLP/JSON ExportTraceServiceRequest, the
// body a collector accepts on POST /v1/traces with Content-Type
// application/json. Spans sharing a resource and scope are grouped, in
// the order given. It holds one span's JSON at a time, not the request's
// (a bundle of a session of a million events writes a trace of a few GB),
// so a span that cannot be encoded fails it part-way through the output.
func WriteJSON(w io.Writer, spans tracetest.SpanStubs) error {
	// The groups first, as span indices: resources in the order they
	// first appear, and in each its scopes in that order.
	type scopeGroup struct {
		scope jsonScope
		spans []int
	}
	type resourceGroup struct {
		res    jsonResource
		schema string
		scopes []*scopeGroup
		byKey  map[string]*scopeGroup
	}
	var groups []*resourceGroup
	byRes := map[string]*resourceGroup{}
	for i, s := range spans {
		rk := ""
		if s.Resource != nil {
			rk = s.Resource.Encoded(attribute.DefaultEncoder())
		}
		rg := byRes[rk]
		if rg == nil {
			rg = &resourceGroup{res: jsonResource{Attributes: []jsonKeyValue{}}, byKey: map[string]*scopeGroup{}}
			if s.Resource != nil {
				rg.res.Attributes, rg.schema = jsonAttrs(s.Resource.Attributes()), s.Resource.SchemaURL()
			}
			byRes[rk] = rg
			groups = append(groups, rg)
		}
		sk := s.InstrumentationScope.Name + "\x00" + s.InstrumentationScope.Version
		sg := rg.byKey[sk]
		if sg == nil {
			sg = &scopeGroup{scope: jsonScope{Name: s.InstrumentationScope.Name, Version: s.InstrumentationScope.Version}}
			rg.byKey[sk] = sg
			rg.scopes = append(rg.scopes, sg)
		}
		sg.spans = append(sg.spans, i)
	}
	f := newFramer(w)
	f.begin()
	for ri, rg := range groups {
		f.beginResource(ri, rg.res)
		for si, sg := range rg.scopes {
			f.beginScope(si, sg.scope)
			for k, i := range sg.spans {
				f.span(k, spans[i])
			}
			f.endScope()
		}
		f.endResource(rg.schema)
	}
	return f.end()
}

// WriteSessionJSON is WriteJSON(w, Spans(sessionID, evs, opts)) for the
// events each hands over one at a time: it holds the spans still open and
// one span's JSON, not the session's spans, so a bundle's trace.json of a
// session of any length costs what its open spans do. The spans of one
// session share a resource and a scope (the builder's), so they are one
// group, opened at the first.
func WriteSessionJSON(w io.Writer, sessionID string, each func(func(session.Event)), opts Options) error {
	f := newFramer(w)
	f.begin()
	n := 0
	var schema string
	b := newBuilder(sessionID, opts, func(s tracetest.SpanStub) {
		if n == 0 {
			res := jsonResource{Attributes: jsonAttrs(s.Resource.Attributes())}
			schema = s.Resource.SchemaURL()
			f.beginResource(0, res)
			f.beginScope(0, jsonScope{Name: s.InstrumentationScope.Name, Version: s.InstrumentationScope.Version})
		}
		f.span(n, s)
		n++
	}, nil)
	each(b.add)
	b.close()
	if n > 0 {
		f.endScope()
		f.endResource(schema)
	}
	return f.end()
}

// framer writes an ExportTraceServiceRequest a part at a time, each part
// as encoding/json writes it inside the whole request. Its first error
// stops it and is returned by end.
type framer struct {
	bw  *bufio.Writer
	buf bytes.Buffer
	enc *json.Encoder
	err error
}

func newFramer(w io.Writer) *framer {
	f := &framer{bw: bufio.NewWriterSize(w, 64<<10)}
	f.enc = json.NewEncoder(&f.buf)
	f.enc.SetEscapeHTML(false)
	return f
}

func (f *framer) raw(s string) {
	if f.err == nil {
		_, f.err = f.bw.WriteString(s)
	}
}

// put writes v's JSON.
func (f *framer) put(v any) {
	if f.err != nil {
		return
	}
	f.buf.Reset()
	if f.err = f.enc.Encode(v); f.err == nil {
		_, f.err = f.bw.Write(bytes.TrimSuffix(f.buf.Bytes(), []byte{'\n'}))
	}
}

// comma separates the i-th item of a list from the one before it.
func (f *framer) comma(i int) {
	if i > 0 {
		f.raw(",")
	}
}

func (f *framer) begin() { f.raw(`{"resourceSpans":[`) }

func (f *framer) beginResource(i int, res jsonResource) {
	f.comma(i)
	f.raw(`{"resource":`)
	f.put(res)
	f.raw(`,"scopeSpans":[`)
}

func (f *framer) beginScope(i int, scope jsonScope) {
	f.comma(i)
	f.raw(`{"scope":`)
	f.put(scope)
	f.raw(`,"spans":[`)
}

func (f *framer) span(i int, s tracetest.SpanStub) {
	f.comma(i)
	f.put(jsonSpanOf(s))
}

func (f *framer) endScope() { f.raw(`]}`) }

func (f *framer) endResource(schema string) {
	f.raw(`]`)
	if schema != "" {
		f.raw(`,"schemaUrl":`)
		f.put(schema)
	}
	f.raw(`}`)
}

func (f *framer) end() error {
	f.raw("]}\n")
	if f.err == nil {
		f.err = f.bw.Flush()
	}
	return f.err
}

func jsonSpanOf(s tracetest.SpanStub) jsonSpan {
	js := jsonSpan{
		TraceID: s.SpanContext.TraceID().String(), SpanID: s.SpanContext.SpanID().String(),
		Flags: uint32(s.SpanContext.TraceFlags()) | flagContextHasIsRemote,
		Name:  s.Name, Kind: int(s.SpanKind),
		StartTimeUnixNano: strconv.FormatInt(s.StartTime.UnixNano(), 10),
		EndTimeUnixNano:   strconv.FormatInt(s.EndTime.UnixNano(), 10),
		Attributes:        jsonAttrs(s.Attributes),
		Status:            jsonStatus{Message: s.Status.Description},
	}
	if s.Parent.SpanID().IsValid() {
		js.ParentSpanID = s.Parent.SpanID().String()
	}
	switch s.Status.Code {
	case codes.Ok:
		js.Status.Code = 1
	case codes.Error:
		js.Status.Code = 2
	}
	for _, e := range s.Events {
		js.Events = append(js.Events, jsonEvent{TimeUnixNano: strconv.FormatInt(e.Time.UnixNano(), 10),
			Name: e.Name, Attributes: jsonAttrs(e.Attributes)})
	}
	for _, l := range s.Links {
		js.Links = append(js.Links, jsonLink{TraceID: l.SpanContext.TraceID().String(), SpanID: l.SpanContext.SpanID().String(),
			Attributes: jsonAttrs(l.Attributes), Flags: uint32(l.SpanContext.TraceFlags()) | flagContextHasIsRemote})
	}
	return js
}

func jsonAttrs(kvs []attribute.KeyValue) []jsonKeyValue {
	out := make([]jsonKeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, jsonKeyValue{Key: string(kv.Key), Value: jsonValueOf(kv.Value)})
	}
	return out
}

// jsonArray is the OTLP JSON array of the values of xs.
func jsonArray[T any](xs []T, value func(T) attribute.Value) jsonValue {
	var vs []jsonValue
	for _, x := range xs {
		vs = append(vs, jsonValueOf(value(x)))
	}
	return jsonValue{ArrayValue: &jsonValues{Values: vs}}
}

func jsonValueOf(v attribute.Value) jsonValue {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return jsonValue{BoolValue: &b}
	case attribute.INT64:
		s := strconv.FormatInt(v.AsInt64(), 10)
		return jsonValue{IntValue: &s}
	case attribute.FLOAT64:
		f := v.AsFloat64()
		return jsonValue{DoubleValue: &f}
	case attribute.BOOLSLICE:
		return jsonArray(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return jsonArray(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return jsonArray(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return jsonArray(v.AsStringSlice(), attribute.StringValue)
	default:
		s := v.Emit()
		return jsonValue{StringValue: &s}
	}
}
