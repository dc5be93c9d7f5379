package collect

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// idKeys are the fields OTLP JSON spells as hex where protobuf's JSON
// mapping (protojson) wants base64: trace and span ids of spans, links
// and log records (the OTLP specification's one exception to the
// mapping), by both the JSON and the proto names protojson accepts.
var idKeys = map[string]bool{
	"traceId": true, "spanId": true, "parentSpanId": true,
	"trace_id": true, "span_id": true, "parent_span_id": true,
}

// unmarshalJSON decodes an OTLP JSON request into m: ids from hex, int64
// values as strings or numbers, enums as numbers or names, and unknown
// fields ignored, as the OTLP specification asks of receivers.
func unmarshalJSON(b []byte, m proto.Message) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // int64s written as numbers keep every digit
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("not JSON: data after the request object")
	}
	if err := hexToBase64(v); err != nil {
		return err
	}
	nb, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(nb, m); err != nil {
		return fmt.Errorf("not an OTLP JSON request: %w", err)
	}
	return nil
}

// hexToBase64 rewrites every id field below v in place.
func hexToBase64(v any) error {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && idKeys[k] {
				raw, err := hex.DecodeString(s)
				if err != nil {
					return fmt.Errorf("%s %q: not hex (OTLP JSON spells trace and span ids as hex)", k, clip(s, 64))
				}
				x[k] = base64.StdEncoding.EncodeToString(raw)
				continue
			}
			if err := hexToBase64(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := hexToBase64(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// marshalJSON encodes a response message as OTLP JSON.
func marshalJSON(m proto.Message) ([]byte, error) {
	return protojson.Marshal(m)
}

// clip cuts s to at most n bytes, for quoting hostile input in errors.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
