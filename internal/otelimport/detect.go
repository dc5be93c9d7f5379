package otelimport

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"slices"

	"github.com/klauspost/compress/zstd"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/agentctl/agentctl/internal/otelsession"
	"github.com/agentctl/agentctl/internal/transcript"
)

// otlp is a format of `agentctl import` like the transcripts, so that
// `import auto` tells its files from theirs; its files are imported by
// Import (into the home, joining the sessions their spans belong to), not
// by the transcript package.
func init() {
	transcript.Register(transcript.Format{
		Name: otelsession.FormatOTLP,
		Doc: "OpenTelemetry traces and logs (GenAI semconv, OpenInference,\n" +
			"OpenLLMetry, Vercel AI SDK): the Collector's file exporter\n" +
			"output (JSON lines or protobuf), OTLP protobuf files, or its\n" +
			"S3 exporter's objects: 'import otlp PATH|s3://bucket/prefix'\n" +
			"(see 'agentctl import otlp --help')",
		Detect: Detect,
	})
}

// Detect claims OTLP from a file's head: a JSON object whose key is
// resourceSpans, resourceLogs or resourceMetrics (camel or snake case), or
// protobuf export requests (one, or the file exporter's length-prefixed
// frames) whose structure down to the first span, log record or metric is
// OTLP's; compressed by gzip or zstd or not.
func Detect(h *transcript.Head) bool {
	b := h.Bytes
	if bytes.HasPrefix(b, []byte{0x1f, 0x8b}) || bytes.HasPrefix(b, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
		b = inflateHead(b)
		h = &transcript.Head{Name: h.Name, Bytes: b}
	}
	if keys, _, ok := h.TopKeys(); ok {
		return slices.ContainsFunc(keys, func(k string) bool { return jsonSignal([]byte(`{"`+k+`":{}}`)) != "" })
	}
	if len(b) >= 4 {
		// The file exporter's frames: a length (4 bytes, big-endian), then
		// a message the head holds whole or is cut short by.
		if n := int(binary.BigEndian.Uint32(b)); n > 0 && n <= MaxMessageBytes && (n <= len(b)-4 || len(b) == transcript.HeadBytes) {
			if exportRequest(b[4:min(len(b), 4+n)]) {
				return true
			}
		}
	}
	return exportRequest(b)
}

// inflateHead decompresses what the head holds of a compressed file (a
// stream cut short gives what came before the cut).
func inflateHead(b []byte) []byte {
	var r io.Reader
	if b[0] == 0x1f {
		z, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil
		}
		r = z
	} else {
		z, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderMaxMemory(4*transcript.HeadBytes))
		if err != nil {
			return nil
		}
		defer z.Close()
		r = z
	}
	out, _ := io.ReadAll(io.LimitReader(r, transcript.HeadBytes))
	return out
}

// Field shapes: number -> wire type, for the messages Detect walks.
var (
	resourceFields = map[protowire.Number]protowire.Type{1: protowire.BytesType, 2: protowire.BytesType, 3: protowire.BytesType}
	scopeFields    = resourceFields
	spanFields     = map[protowire.Number]protowire.Type{1: protowire.BytesType, 2: protowire.BytesType, 3: protowire.BytesType,
		4: protowire.BytesType, 5: protowire.BytesType, 6: protowire.VarintType, 7: protowire.Fixed64Type, 8: protowire.Fixed64Type,
		9: protowire.BytesType, 10: protowire.VarintType, 11: protowire.BytesType, 12: protowire.VarintType, 13: protowire.BytesType,
		14: protowire.VarintType, 15: protowire.BytesType, 16: protowire.Fixed32Type}
	logFields = map[protowire.Number]protowire.Type{1: protowire.Fixed64Type, 11: protowire.Fixed64Type, 2: protowire.VarintType,
		3: protowire.BytesType, 5: protowire.BytesType, 6: protowire.BytesType, 7: protowire.VarintType, 8: protowire.Fixed32Type,
		9: protowire.BytesType, 10: protowire.BytesType, 12: protowire.BytesType}
	metricFields = map[protowire.Number]protowire.Type{1: protowire.BytesType, 2: protowire.BytesType, 3: protowire.BytesType,
		5: protowire.BytesType, 7: protowire.BytesType, 9: protowire.BytesType, 10: protowire.BytesType, 11: protowire.BytesType,
		12: protowire.BytesType}
)

// exportRequest reports whether b (maybe cut short) is an export request:
// only resource_* entries (field 1), the first of which walks down, with
// OTLP's field numbers and wire types, to a span (16-byte trace id,
// 8-byte span id), a log record or a metric.
func exportRequest(b []byte) bool {
	found := false
	ok := walk(b, map[protowire.Number]protowire.Type{1: protowire.BytesType}, func(num protowire.Number, v []byte, first bool) bool {
		if !first {
			return true
		}
		return walk(v, resourceFields, func(num protowire.Number, v []byte, _ bool) bool {
			if num != 2 || found {
				return true
			}
			return walk(v, scopeFields, func(num protowire.Number, v []byte, _ bool) bool {
				if num != 2 || found {
					return true
				}
				found = item(v)
				return found
			})
		})
	})
	return ok && found
}

// item reports whether v is a span, a log record or a metric.
func item(v []byte) bool {
	var tid, sid int
	span := walk(v, spanFields, func(num protowire.Number, v []byte, _ bool) bool {
		switch num {
		case 1:
			tid = len(v)
		case 2:
			sid = len(v)
		}
		return true
	})
	if span && tid == 16 && sid == 8 {
		return true
	}
	fields := 0
	counting := func(protowire.Number, []byte, bool) bool { fields++; return true }
	if walk(v, logFields, counting) && fields >= 2 {
		return true
	}
	fields = 0
	var name []byte
	return walk(v, metricFields, func(num protowire.Number, v []byte, _ bool) bool {
		fields++
		if num == 1 {
			name = v
		}
		return true
	}) && fields >= 2 && len(name) > 0
}

// walk reads the fields of a message that may be cut short: each must be
// one of shapes with its wire type; f sees each length-delimited value
// (cut short as the bytes are) and may refuse it. An empty message is
// refused.
func walk(b []byte, shapes map[protowire.Number]protowire.Type, f func(num protowire.Number, v []byte, first bool) bool) bool {
	first := true
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return !first // a tag cut short by the head
		}
		if want, ok := shapes[num]; !ok || want != typ {
			return false
		}
		b = b[n:]
		switch typ {
		case protowire.BytesType:
			l, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return !first
			}
			b = b[m:]
			v := b
			cut := l > uint64(len(b))
			if !cut {
				v = b[:l]
			}
			if !f(num, v, first) {
				return false
			}
			if cut {
				return true
			}
			b = b[l:]
		default:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return !first
			}
			b = b[m:]
		}
		first = false
	}
	return !first
}
