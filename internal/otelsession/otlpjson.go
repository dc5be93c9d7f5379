package otelsession

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// OTLP/JSON is protobuf's JSON mapping with one exception: trace and span
// ids are hex strings, not base64 (the OTLP specification, "JSON Protobuf
// Encoding"). DecodeTracesJSON and DecodeLogsJSON read it, for `agentctl
// collect` (HTTP application/json) and `agentctl import otlp` (the
// Collector's file exporter) alike.

// idKeys are the fields that hold a trace or span id, in either spelling
// protojson accepts.
var idKeys = map[string]bool{
	"traceId": true, "spanId": true, "parentSpanId": true,
	"trace_id": true, "span_id": true, "parent_span_id": true,
}

// DecodeTracesJSON decodes one OTLP/JSON ExportTraceServiceRequest (a
// body of POST /v1/traces, or a line of the file exporter).
func DecodeTracesJSON(b []byte) (*coltracepb.ExportTraceServiceRequest, error) {
	req := &coltracepb.ExportTraceServiceRequest{}
	if err := decodeOTLPJSON(b, req); err != nil {
		return nil, fmt.Errorf("otlp json traces: %w", err)
	}
	return req, nil
}

// DecodeLogsJSON decodes one OTLP/JSON ExportLogsServiceRequest.
func DecodeLogsJSON(b []byte) (*collogspb.ExportLogsServiceRequest, error) {
	req := &collogspb.ExportLogsServiceRequest{}
	if err := decodeOTLPJSON(b, req); err != nil {
		return nil, fmt.Errorf("otlp json logs: %w", err)
	}
	return req, nil
}

func decodeOTLPJSON(b []byte, m proto.Message) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if err := hexIDs(v, 0); err != nil {
		return err
	}
	out, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return protoJSON.UnmarshalOptions.Unmarshal(out, m)
}

// hexIDs rewrites every id field of v from hex to base64, in place.
func hexIDs(v any, depth int) error {
	if depth > 64 {
		return fmt.Errorf("nested more than 64 levels deep")
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && idKeys[k] {
				raw, err := hex.DecodeString(s)
				if err != nil {
					return fmt.Errorf("%s %q is not hex", k, s)
				}
				x[k] = base64.StdEncoding.EncodeToString(raw)
				continue
			}
			if err := hexIDs(e, depth+1); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := hexIDs(e, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}
