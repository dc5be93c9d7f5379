package otelsession

import (
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// An acknowledgement of a protobuf trace export does not decode it: it
// reads from the bytes what the checks and the spool need (each span's
// ids, times, largest attributes and session-key attributes), checks the
// rest as proto.Unmarshal would (wire types, lengths, UTF-8), and keeps
// the bytes. The spans are decoded when their trace is written
// (span.expand). Decoding into messages is most of what an export costs
// (TestScanMatchesDecode holds the two readings to the same records).

// wireBody is where the pending spans of one trace export are: its bytes
// or decoding while it is being taken, then its frame in the spool.
type wireBody struct {
	b   []byte                                // the bytes, until spooled
	req *coltracepb.ExportTraceServiceRequest // decoded: as taken, or while its traces are written
	gen *spoolGen                             // the spool file of its frame, once spooled
	off int64
	n   int
}

// at says the export is the frame at off in g's file: what it held in
// memory can go.
func (w *wireBody) at(g *spoolGen, off int64, n int) {
	w.gen, w.off, w.n, w.b, w.req = g, off, n, nil, nil
}

// release lets the decoding go when the export can be read again (its
// other spans, still pending, decode it again).
func (w *wireBody) release() {
	if w.gen != nil || w.b != nil {
		w.req = nil
	}
}

func (w *wireBody) decoded() (*coltracepb.ExportTraceServiceRequest, error) {
	if w.req != nil {
		return w.req, nil
	}
	b := w.b
	if b == nil {
		if w.gen == nil {
			return nil, errors.New("the export is neither in memory nor in the spool")
		}
		// Read into a buffer used again for the next (decoding copies).
		buf, _ := frameBufs.Get().(*[]byte)
		if buf == nil {
			buf = new([]byte)
		}
		defer frameBufs.Put(buf)
		var err error
		b, *buf, err = w.gen.frame(w.off, w.n, *buf)
		if err != nil {
			return nil, err
		}
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		return nil, err
	}
	w.req = req
	return req, nil
}

// frameBufs are buffers spool frames are read back into.
var frameBufs sync.Pool

// wireRef is where a span is in its export.
type wireRef struct {
	body          *wireBody
	rs, ss, index int
}

func (r *wireRef) span() (*tracepb.ResourceSpans, *tracepb.ScopeSpans, *tracepb.Span, error) {
	req, err := r.body.decoded()
	if err != nil {
		return nil, nil, nil, err
	}
	rs := req.GetResourceSpans()[r.rs]
	ss := rs.GetScopeSpans()[r.ss]
	return rs, ss, ss.GetSpans()[r.index], nil
}

// traceRequestSchema is checkWire's view of an ExportTraceServiceRequest,
// built once.
var traceRequestSchema = sync.OnceValue(func() *schema {
	return newSchema((&coltracepb.ExportTraceServiceRequest{}).ProtoReflect().Descriptor())
})

// traceRecordsWire is traceRecords for a protobuf export read from its
// bytes: the same records, in the same order, with the same refusals.
// holds says whether a string holds a secret: every string of the export
// is shown to it, and one that does makes the spool decode and redact.
func traceRecordsWire(b []byte, opts Options, holds func([]byte) bool) (*records, error) {
	r := &records{wire: b}
	if err := checkWire(b, traceRequestSchema(), func(s []byte) {
		if !r.secret && holds(s) {
			r.secret = true
		}
	}); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	body := &wireBody{b: b}
	r.body = body
	rsi := 0
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != 1 || typ != bytesT {
			return nil
		}
		i := rsi
		rsi++
		return r.scanResourceSpans(v, body, i, opts)
	})
	return r, err
}

func (r *records) scanResourceSpans(b []byte, body *wireBody, rsi int, opts Options) error {
	var res attrs
	if err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num == 1 && typ == bytesT { // resource
			var kvs []*commonpb.KeyValue
			err := fields(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
				if num == 1 && typ == bytesT {
					if kv := sessionKeyKV(v); kv != nil {
						kvs = append(kvs, kv)
					}
				}
				return nil
			})
			res = toAttrs(kvs)
			return err
		}
		return nil
	}); err != nil {
		return err
	}
	if res == nil {
		res = attrs{}
	}
	ssi := 0
	return fields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != 2 || typ != bytesT { // scope_spans
			return nil
		}
		i := ssi
		ssi++
		scope := ""
		k := 0
		return fields(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
			if typ != bytesT {
				return nil
			}
			switch num {
			case 1: // scope
				return fields(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
					if num == 1 && typ == bytesT {
						scope = string(v)
					}
					return nil
				})
			case 2: // spans
				idx := k
				k++
				r.scanSpan(v, res, scope, &wireRef{body: body, rs: rsi, ss: i, index: idx}, opts)
			}
			return nil
		})
	})
}

// scanSpan makes the record of one span, as traceRecords does.
func (r *records) scanSpan(b []byte, res attrs, scope string, ref *wireRef, opts Options) {
	var tid, sid []byte
	var start, end uint64
	var keys []*commonpb.KeyValue
	var bigKey []byte
	most := 0 // the largest attribute's valueBytes, as attrBytes counts
	evs := r.evs[:0]
	fields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case typ == fixed64T && num == 7:
			start = fixed(v)
		case typ == fixed64T && num == 8:
			end = fixed(v)
		case typ != bytesT:
		case num == 1:
			tid = v
		case num == 2:
			sid = v
		case num == 9:
			k, n := kvBytes(v)
			if n > most {
				bigKey, most = k, n
			}
			if isSessionKey(k) {
				if kv := decodeKV(v); kv != nil {
					keys = append(keys, kv)
				}
			}
		case num == 11:
			evs = append(evs, v)
		}
		return nil
	})
	r.evs = evs // kept for the next span's
	th, sh := hex.EncodeToString(tid), hex.EncodeToString(sid)
	if !validID(tid, 16) || !validID(sid, 8) {
		r.rejected = append(r.rejected, Rejection{TraceID: th, SpanID: sh, Reason: "the span has no valid trace_id (16 bytes) and span_id (8 bytes)"})
		return
	}
	if why := tooLargeWire(opts, string(bigKey), most, evs); why != "" {
		r.rejected = append(r.rejected, Rejection{TraceID: th, SpanID: sh, Reason: why})
		return
	}
	sp := &span{TraceID: th, SpanID: sh, Start: unixNano(start), End: unixNano(end), Attrs: keyAttrs(keys), Resource: res, Scope: scope, ref: ref}
	r.spans = append(r.spans, sp)
	r.keys = append(r.keys, th+"/"+sh)
	r.groups = append(r.groups, groupOf(sessionKey(sp), th))
}

// tooLargeWire is tooLarge on a span's attributes and events as bytes.
// key and n are the span's largest attribute and its size.
func tooLargeWire(opts Options, key string, n int, evs [][]byte) string {
	if n > opts.MaxAttrBytes {
		return fmt.Sprintf("attribute %s is %s, over the %s limit", key, size(n), size(opts.MaxAttrBytes))
	}
	for _, e := range evs {
		var name string
		var ekvs [][]byte
		fields(e, func(num protowire.Number, typ protowire.Type, v []byte) error {
			switch {
			case typ != bytesT:
			case num == 2:
				name = string(v)
			case num == 3:
				ekvs = append(ekvs, v)
			}
			return nil
		})
		if k, n := attrBytesWire(ekvs); n > opts.MaxAttrBytes {
			return fmt.Sprintf("attribute %s of event %s is %s, over the %s limit", k, name, size(n), size(opts.MaxAttrBytes))
		}
	}
	return ""
}

// attrBytesWire is attrBytes on KeyValues as bytes.
func attrBytesWire(kvs [][]byte) (string, int) {
	var key []byte
	most := 0
	for _, kv := range kvs {
		if k, n := kvBytes(kv); n > most {
			key, most = k, n
		}
	}
	return string(key), most
}

// kvBytes is a KeyValue's key and its value's valueBytes (8 for a
// missing value, as valueBytes of nil).
func kvBytes(kv []byte) ([]byte, int) {
	var k, v []byte
	hasV := false
	fields(kv, func(num protowire.Number, typ protowire.Type, b []byte) error {
		switch {
		case typ != bytesT:
		case num == 1:
			k = b
		case num == 2:
			v, hasV = b, true
		}
		return nil
	})
	if !hasV {
		return k, 8
	}
	return k, valueBytesWire(v)
}

// valueBytesWire is valueBytes on an AnyValue as bytes (of a oneof the
// last member set wins, as when decoding).
func valueBytesWire(b []byte) int {
	n := 8
	fields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case typ == bytesT && (num == 1 || num == 7): // string_value, bytes_value
			n = len(v)
		case typ == bytesT && num == 5: // array_value
			n = 0
			fields(v, func(num protowire.Number, typ protowire.Type, e []byte) error {
				if num == 1 && typ == bytesT {
					n += valueBytesWire(e)
				}
				return nil
			})
		case typ == bytesT && num == 6: // kvlist_value
			n = 0
			fields(v, func(num protowire.Number, typ protowire.Type, kv []byte) error {
				if num != 1 || typ != bytesT {
					return nil
				}
				hasV := false
				fields(kv, func(num protowire.Number, typ protowire.Type, x []byte) error {
					switch {
					case typ != bytesT:
					case num == 1:
						n += len(x)
					case num == 2:
						n += valueBytesWire(x)
						hasV = true
					}
					return nil
				})
				if !hasV {
					n += 8
				}
				return nil
			})
		case typ == varintT && (num == 2 || num == 3 || num == 8), typ == fixed64T && num == 4: // bool, int, strindex, double
			n = 8
		}
		return nil
	})
	return n
}

// isSessionKey reports whether key is one of sessionKeys.
func isSessionKey(key []byte) bool {
	for _, k := range sessionKeys {
		if string(key) == k {
			return true
		}
	}
	return false
}

// sessionKeyKV decodes a KeyValue whose key is one of sessionKeys (nil
// for any other).
func sessionKeyKV(b []byte) *commonpb.KeyValue {
	if k, _ := kvBytes(b); !isSessionKey(k) {
		return nil
	}
	return decodeKV(b)
}

func decodeKV(b []byte) *commonpb.KeyValue {
	kv := &commonpb.KeyValue{}
	if proto.Unmarshal(b, kv) != nil {
		return nil
	}
	return kv
}

func fixed(v []byte) uint64 {
	if len(v) != 8 {
		return 0
	}
	n, _ := protowire.ConsumeFixed64(v)
	return n
}

// fields calls fn with each field of a message checked by checkWire, in
// order: v is the content of a length-delimited field, else the field's
// value as encoded. A field the decoder would read must be of its wire
// type (another is an unknown field to it): fn sees typ to tell.
func fields(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte) error) error {
	for len(b) > 0 {
		num, typ, v, n := nextField(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := fn(num, typ, v); err != nil {
			return err
		}
	}
	return nil
}

// nextField reads the field b begins with: its number, wire type and
// value (a length-delimited field's content, else the value as encoded)
// and n, the bytes of the whole field, tag included; a negative n is
// protowire's error code. The one reading of a field for fields and
// DecodeCost.
func nextField(b []byte) (num protowire.Number, typ protowire.Type, v []byte, n int) {
	num, typ, tag := protowire.ConsumeTag(b)
	if tag < 0 {
		return 0, 0, nil, tag
	}
	b = b[tag:]
	if typ == protowire.BytesType {
		v, n = protowire.ConsumeBytes(b)
	} else {
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n >= 0 {
			v = b[:n]
		}
	}
	if n < 0 {
		return 0, 0, nil, n
	}
	return num, typ, v, tag + n
}

const (
	bytesT   = protowire.BytesType
	fixed64T = protowire.Fixed64Type
	varintT  = protowire.VarintType
)

// checkWire checks b as a message of sc's type the way proto.Unmarshal
// reads one: every tag and length well formed, every known string valid UTF-8,
// every known message field a message of its type. A known field of
// another wire type is an unknown field to the decoder, and is to this
// check. Each string's bytes are shown to str.
func checkWire(b []byte, sc *schema, str func([]byte)) error {
	return sc.check(b, protoRecursionLimit, str)
}

// protoRecursionLimit is proto.UnmarshalOptions' default: messages
// nested deeper are refused.
const protoRecursionLimit = 10000

// schema is what checkWire needs of a message type, by field number (a
// descriptor lookup per field costs a third of the check).
type schema struct {
	kinds []protoreflect.Kind // 0: not a field, or not a string or message
	subs  []*schema
	// What DecodeCost needs: every field's shape, and the size of the
	// Go struct the type decodes into.
	fields []fieldCost
	size   int64
}

// newSchema is the schema of md and of every message type below it.
func newSchema(md protoreflect.MessageDescriptor) *schema {
	return buildSchema(md, map[protoreflect.FullName]*schema{})
}

func buildSchema(md protoreflect.MessageDescriptor, built map[protoreflect.FullName]*schema) *schema {
	if sc := built[md.FullName()]; sc != nil {
		return sc
	}
	sc := &schema{}
	built[md.FullName()] = sc // before the fields: types nest themselves (AnyValue)
	fds := md.Fields()
	top := 0
	for i := range fds.Len() {
		top = max(top, int(fds.Get(i).Number()))
	}
	sc.kinds, sc.subs, sc.fields = make([]protoreflect.Kind, top+1), make([]*schema, top+1), make([]fieldCost, top+1)
	sc.costInfo(md)
	for i := range fds.Len() {
		fd := fds.Get(i)
		if fd.IsMap() {
			continue
		}
		switch fd.Kind() {
		case protoreflect.StringKind:
			sc.kinds[fd.Number()] = protoreflect.StringKind
		case protoreflect.MessageKind:
			sc.kinds[fd.Number()] = protoreflect.MessageKind
			sc.subs[fd.Number()] = buildSchema(fd.Message(), built)
		}
	}
	return sc
}

func (sc *schema) check(b []byte, depth int, str func([]byte)) error {
	if depth < 0 {
		return errors.New("exceeded maximum recursion depth")
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if typ == protowire.BytesType && int(num) < len(sc.kinds) && sc.kinds[num] != 0 {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			if sc.kinds[num] == protoreflect.StringKind {
				if !utf8.Valid(v) {
					return fmt.Errorf("field %d holds invalid UTF-8", num)
				}
				str(v)
			} else if err := sc.subs[num].check(v, depth-1, str); err != nil {
				return err
			}
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
	}
	return nil
}
