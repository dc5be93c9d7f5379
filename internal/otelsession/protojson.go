package otelsession

import "google.golang.org/protobuf/encoding/protojson"

// protoJSON is how the spool writes an OTLP request: protobuf's JSON
// mapping (ids in base64, as protojson spells bytes).
var protoJSON = struct {
	protojson.MarshalOptions
	protojson.UnmarshalOptions
}{protojson.MarshalOptions{}, protojson.UnmarshalOptions{DiscardUnknown: true}}
