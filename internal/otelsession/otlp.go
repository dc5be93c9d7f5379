package otelsession

import (
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// attrs is an OTLP attribute list as Go values: string, int64, float64,
// bool, []any and map[string]any (a kvlist); bytes become lowercase hex.
type attrs map[string]any

// str returns the first of keys that holds a non-empty value, as a string
// (a number or bool formatted, an array or map as JSON).
func (a attrs) str(keys ...string) string {
	for _, k := range keys {
		v, ok := a[k]
		if !ok {
			continue
		}
		switch x := v.(type) {
		case string:
			if x != "" {
				return x
			}
		case int64:
			return strconv.FormatInt(x, 10)
		case float64:
			return strconv.FormatFloat(x, 'g', -1, 64)
		case bool:
			return strconv.FormatBool(x)
		default:
			b, err := json.Marshal(x)
			if err == nil {
				return string(b)
			}
		}
	}
	return ""
}

// int returns the first of keys that holds a number (or a string of one).
func (a attrs) int(keys ...string) (int64, bool) {
	for _, k := range keys {
		switch x := a[k].(type) {
		case int64:
			return x, true
		case float64:
			return int64(x), true
		case string:
			if n, err := strconv.ParseInt(x, 10, 64); err == nil {
				return n, true
			}
		}
	}
	return 0, false
}

// strs returns keys' first value as a list of strings (an OTLP string
// array, or a JSON array in a string, as some SDKs write them).
func (a attrs) strs(keys ...string) []string {
	for _, k := range keys {
		switch x := a[k].(type) {
		case []any:
			var out []string
			for _, v := range x {
				if s, ok := v.(string); ok {
					out = append(out, s)
				}
			}
			return out
		case string:
			var out []string
			if json.Unmarshal([]byte(x), &out) == nil {
				return out
			}
			if x != "" {
				return []string{x}
			}
		}
	}
	return nil
}

func anyValue(v *commonpb.AnyValue) any {
	if v == nil {
		return nil
	}
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_BytesValue:
		return hex.EncodeToString(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, anyValue(e))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		m := map[string]any{}
		for _, kv := range x.KvlistValue.GetValues() {
			m[kv.GetKey()] = anyValue(kv.GetValue())
		}
		return m
	}
	return nil
}

func toAttrs(kvs []*commonpb.KeyValue) attrs {
	a := make(attrs, len(kvs))
	for _, kv := range kvs {
		a[kv.GetKey()] = anyValue(kv.GetValue())
	}
	return a
}

// attrBytes is the size of the largest attribute value of kvs, the
// number Options.MaxAttrBytes bounds.
func attrBytes(kvs []*commonpb.KeyValue) (string, int) {
	key, most := "", 0
	for _, kv := range kvs {
		if n := valueBytes(kv.GetValue()); n > most {
			key, most = kv.GetKey(), n
		}
	}
	return key, most
}

func valueBytes(v *commonpb.AnyValue) int {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return len(x.StringValue)
	case *commonpb.AnyValue_BytesValue:
		return len(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		n := 0
		for _, e := range x.ArrayValue.GetValues() {
			n += valueBytes(e)
		}
		return n
	case *commonpb.AnyValue_KvlistValue:
		n := 0
		for _, kv := range x.KvlistValue.GetValues() {
			n += len(kv.GetKey()) + valueBytes(kv.GetValue())
		}
		return n
	}
	return 8
}

// span is one OTLP span with its resource's and scope's attributes, in
// the form the conventions read.
type span struct {
	TraceID, SpanID, ParentID string // lowercase hex
	Name                      string
	Start, End                time.Time
	Attrs                     attrs
	Events                    []spanEvent
	Resource                  attrs
	Scope                     string
	// Err is the status message of a span whose status is ERROR
	// ("error" when it has none).
	Err string
	msg *tracepb.Span // a thinSpan's message, until expand
	ref *wireRef      // or where it is in the bytes it came in (traceRecordsWire)
}

type spanEvent struct {
	Name  string
	Time  time.Time
	Attrs attrs
}

func unixNano(n uint64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(n)).UTC()
}

// thinSpan is what a span's acknowledgement needs: its ids and times and
// the attributes that name its session (sessionKeys). expand fills in the
// rest when its trace is written, so a pending span costs little more
// than its decoded message.
func thinSpan(res attrs, scope string, s *tracepb.Span) *span {
	var keys []*commonpb.KeyValue
	for _, kv := range s.GetAttributes() {
		if slices.Contains(sessionKeys, kv.GetKey()) {
			keys = append(keys, kv)
		}
	}
	return &span{
		TraceID:  hex.EncodeToString(s.GetTraceId()),
		SpanID:   hex.EncodeToString(s.GetSpanId()),
		Start:    unixNano(s.GetStartTimeUnixNano()),
		End:      unixNano(s.GetEndTimeUnixNano()),
		Attrs:    keyAttrs(keys),
		Resource: res,
		Scope:    scope,
		msg:      s,
	}
}

// keyAttrs is a thin span's attributes: its session keys, nil (a read
// of which finds nothing) when it has none, so a pending span costs less.
func keyAttrs(keys []*commonpb.KeyValue) attrs {
	if len(keys) == 0 {
		return nil
	}
	return toAttrs(keys)
}

// expand makes a thinSpan whole, decoding the export it came in if it
// was read from its bytes (that export is then kept decoded in its
// wireBody until the caller lets it go). One that cannot be decoded,
// which the check of its bytes should make impossible, keeps its ids and
// times and says why in its name: it maps to no event and is kept in
// otel_spans, not lost.
func (sp *span) expand() *wireBody {
	switch {
	case sp.ref != nil:
		body := sp.ref.body
		rs, ss, s, err := sp.ref.span()
		if err != nil {
			sp.Name, sp.ref = "undecodable span: "+err.Error(), nil
			return nil
		}
		*sp = *newSpan(toAttrs(rs.GetResource().GetAttributes()), ss.GetScope().GetName(), s)
		return body
	case sp.msg != nil:
		*sp = *newSpan(sp.Resource, sp.Scope, sp.msg)
	}
	return nil
}

func newSpan(res attrs, scope string, s *tracepb.Span) *span {
	sp := &span{
		TraceID:  hex.EncodeToString(s.GetTraceId()),
		SpanID:   hex.EncodeToString(s.GetSpanId()),
		ParentID: hex.EncodeToString(s.GetParentSpanId()),
		Name:     s.GetName(),
		Start:    unixNano(s.GetStartTimeUnixNano()),
		End:      unixNano(s.GetEndTimeUnixNano()),
		Attrs:    toAttrs(s.GetAttributes()),
		Resource: res,
		Scope:    scope,
	}
	for _, e := range s.GetEvents() {
		sp.Events = append(sp.Events, spanEvent{Name: e.GetName(), Time: unixNano(e.GetTimeUnixNano()), Attrs: toAttrs(e.GetAttributes())})
	}
	if s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		sp.Err = s.GetStatus().GetMessage()
		if sp.Err == "" {
			sp.Err = "error"
		}
	}
	return sp
}

// logRec is one OTLP log record: an event of the earlier GenAI
// conventions (gen_ai.user.message, gen_ai.choice, …) or the current
// gen_ai.client.inference.operation.details, joined to its span by trace
// and span id.
type logRec struct {
	TraceID, SpanID string
	Event           string // the event name (event_name, else attribute event.name)
	Time            time.Time
	Attrs           attrs
	Body            any
	Resource        attrs
}

func newLog(res attrs, l *logspb.LogRecord) *logRec {
	r := &logRec{
		TraceID:  hex.EncodeToString(l.GetTraceId()),
		SpanID:   hex.EncodeToString(l.GetSpanId()),
		Event:    l.GetEventName(),
		Time:     unixNano(l.GetTimeUnixNano()),
		Attrs:    toAttrs(l.GetAttributes()),
		Body:     anyValue(l.GetBody()),
		Resource: res,
	}
	if r.Time.IsZero() {
		r.Time = unixNano(l.GetObservedTimeUnixNano())
	}
	if r.Event == "" {
		r.Event = r.Attrs.str("event.name")
	}
	return r
}
