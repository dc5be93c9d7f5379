package otelsession

import (
	"errors"
	"fmt"
	"reflect"
	"sync"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// What decoding an export costs is not its size: an empty message is two
// bytes on the wire and a Go struct of a hundred bytes or more once
// decoded (with its slot in its parent's slice, and the slice's growth),
// so 64 MiB of empty messages decode to gigabytes. DecodeCost reads the
// bytes before anything is decoded and counts what the decoder will
// build (messages by type, repeated elements, oneof wrappers, strings'
// bytes, unknown fields kept) into an upper bound of the bytes it will
// allocate, so a receiver reserves, or refuses, that before decoding
// (TestDecodeCostBounds holds it above what proto.Unmarshal allocates).

// MaxDepth bounds how deep an export's messages nest (an attribute's
// arrays and maps in arrays and maps): deeper is refused before it is
// decoded. A span's attribute is 5 levels down; OTLP exporters never
// send more than a few levels of nested values.
const MaxDepth = 64

// ErrTooDeep: an export nests messages deeper than MaxDepth.
var ErrTooDeep = errors.New("otelsession: export nested too deep")

// Signals whose protobuf exports DecodeCost reads.
const (
	SignalTraces = "traces"
	SignalLogs   = "logs"
)

var costSchemas = sync.OnceValue(func() map[string]*schema {
	return map[string]*schema{
		SignalTraces: traceRequestSchema(),
		SignalLogs:   newSchema((&collogspb.ExportLogsServiceRequest{}).ProtoReflect().Descriptor()),
	}
})

// DecodeCost returns an upper bound of the bytes proto.Unmarshal of b,
// an OTLP protobuf export of signal (SignalTraces or SignalLogs), will
// allocate. Bytes that are not such an export give an error wrapping
// ErrMalformed; nesting past MaxDepth, ErrTooDeep.
func DecodeCost(signal string, b []byte) (int64, error) {
	sc := costSchemas()[signal]
	if sc == nil {
		return 0, fmt.Errorf("otelsession: no OTLP signal %q", signal)
	}
	n, err := sc.cost(b, MaxDepth)
	if errors.Is(err, ErrTooDeep) {
		return 0, fmt.Errorf("%w (over %d levels)", ErrTooDeep, MaxDepth)
	}
	if err != nil {
		return 0, &malformedError{signal, err}
	}
	return n, nil
}

// malformedError is bytes that are not an OTLP protobuf export of a
// signal; errors.Is(err, ErrMalformed) holds.
type malformedError struct {
	signal string
	err    error
}

func (e *malformedError) Error() string {
	return fmt.Sprintf("not an OTLP protobuf request (%s): %v", e.signal, e.err)
}

func (e *malformedError) Is(target error) bool { return target == ErrMalformed }

// Allocation costs the bound counts, in bytes: each includes the
// allocator's rounding and, for slices, what append's doubling leaves
// behind (up to twice the final slice, plus the earlier ones).
const (
	costObject   = 16 // an allocation's overhead beyond its type's size
	costSlot     = 32 // a pointer in a repeated field's slice, grown by append
	costString   = 48 // a string header in a repeated field's slice, grown
	costOneof    = 16 // the wrapper struct of a oneof member
	costScalar   = 16 // an element of a repeated scalar field, grown
	costUnknown  = 6  // per byte of unknown fields kept, grown by append
	costStrSlack = 8  // a string's rounding
)

// fieldCost is what the bound needs of one field.
type fieldCost struct {
	repeated, oneof, bytesKind, scalar bool
}

// costInfo fills the bound's view of sc's fields and its type's size.
func (sc *schema) costInfo(md protoreflect.MessageDescriptor) {
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName()); err == nil {
		sc.size = int64(reflect.TypeOf(mt.Zero().Interface()).Elem().Size())
	} else {
		sc.size = 256
	}
	fds := md.Fields()
	for i := range fds.Len() {
		fd := fds.Get(i)
		n := int(fd.Number())
		fc := fieldCost{repeated: fd.IsList() || fd.IsMap(), oneof: fd.ContainingOneof() != nil && !fd.ContainingOneof().IsSynthetic()}
		switch fd.Kind() {
		case protoreflect.BytesKind:
			fc.bytesKind = true
		case protoreflect.StringKind, protoreflect.MessageKind, protoreflect.GroupKind:
		default:
			fc.scalar = true
		}
		sc.fields[n] = fc
	}
}

// cost is DecodeCost of b as a message of sc's type, depth levels
// allowed below it.
func (sc *schema) cost(b []byte, depth int) (int64, error) {
	if depth < 0 {
		return 0, ErrTooDeep
	}
	total := sc.size + costObject
	for len(b) > 0 {
		num, typ, v, n := nextField(b)
		if n < 0 {
			return 0, protowire.ParseError(n)
		}
		field := b[:n]
		b = b[n:]
		known := int(num) < len(sc.fields) && (sc.kinds[num] != 0 || sc.fields[num] != fieldCost{})
		if !known {
			total += costUnknown * int64(len(field))
			continue
		}
		fc := sc.fields[num]
		if fc.oneof {
			total += costOneof
		}
		bytesT := typ == protowire.BytesType
		switch {
		case sc.kinds[num] == protoreflect.MessageKind && bytesT:
			c, err := sc.subs[num].cost(v, depth-1)
			if err != nil {
				return 0, err
			}
			total += c
			if fc.repeated {
				total += costSlot
			}
		case (sc.kinds[num] == protoreflect.StringKind || fc.bytesKind) && bytesT:
			total += int64(len(v)) + costStrSlack
			if fc.repeated {
				total += costString
			}
		case fc.scalar && bytesT && fc.repeated:
			total += costScalar * int64(len(v)) // packed: at most one element a byte
		case fc.scalar && !bytesT:
			if fc.repeated {
				total += costScalar
			}
		default:
			// A known field of another wire type: unknown to the
			// decoder, which keeps its bytes.
			total += costUnknown * int64(len(field))
		}
	}
	return total, nil
}

// JSON costs more than protobuf per value: a value is decoded into Go's
// generic JSON values (a map per object), encoded again with its ids
// rewritten, and decoded by protojson (decodeOTLPJSON).
const (
	jsonObject = 1024 // a map, its entries' table, the message it becomes
	jsonArray  = 96   // an []any and the repeated field it becomes
	jsonValue  = 96   // a value in a map or a slice, boxed, and its field
	jsonBytes  = 6    // per byte of the text: strings copied, text encoded again
	// A string with escapes is unescaped into a new string and escaped
	// again when the ids are rewritten: LangChain's serialized messages
	// (JSON inside strings) cost 22x their text without this.
	jsonEscape = 64
)

// JSONDecodeCost is DecodeCost for an OTLP/JSON export: an upper bound of
// what DecodeTracesJSON or DecodeLogsJSON allocate, counted on the text
// (objects, arrays, values, bytes) before it is parsed. Nesting past
// MaxDepth gives ErrTooDeep; text that is not JSON is left for the
// decoder to refuse.
func JSONDecodeCost(b []byte) (int64, error) {
	total := jsonBytes * int64(len(b))
	depth := 0
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
				total += jsonEscape
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
			total += jsonValue
		case '{', '[':
			depth++
			if depth > MaxDepth {
				return 0, fmt.Errorf("%w (over %d levels)", ErrTooDeep, MaxDepth)
			}
			if c == '{' {
				total += jsonObject
			} else {
				total += jsonArray
			}
		case '}', ']':
			depth--
		case ',', ':':
			total += jsonValue
		}
	}
	return total, nil
}
