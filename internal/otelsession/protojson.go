package otelsession

import "google.golang.org/protobuf/encoding/protojson"

// protoJSON is protobuf's JSON mapping of OTLP (ids in base64, as
// protojson spells bytes): how OTLP/HTTP JSON requests are read, and how
// the spool of earlier versions held each request.
var protoJSON = struct {
	protojson.MarshalOptions
	protojson.UnmarshalOptions
}{protojson.MarshalOptions{}, protojson.UnmarshalOptions{DiscardUnknown: true}}
