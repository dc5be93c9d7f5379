// Package oteltest is what the OTLP tests of otelsession, collect and the
// CLI share to work with real OpenTelemetry emitters: a capturing OTLP
// receiver (HTTP and gRPC, keeping every request as it came), and the
// emitter apps of fixtures/otel, ready to run against a model server and
// an OTLP endpoint.
//
// # The receiver
//
//	rcv := oteltest.StartReceiver(t)       // 127.0.0.1, free ports, closed by t.Cleanup
//	env := oteltest.ExportEnv(rcv.Endpoint(oteltest.HTTPProtobuf), oteltest.HTTPProtobuf)
//	…run an app with env…
//	for _, r := range rcv.Requests() { … r.Signal, r.Body … }
//
// HTTP requests (POST /v1/traces, /v1/logs) are kept byte for byte, with
// their Content-Type and Content-Encoding, and answered 200 with an empty
// export response in the request's encoding. gRPC exports
// (opentelemetry.proto.collector.{trace,logs}.v1) are kept as the decoded
// message and its protobuf encoding. A request body is capped at
// MaxBody (after gzip too); a larger one is answered 413 and not kept.
// Requests may be called while exports arrive: the receiver is safe for
// concurrent use.
//
// # The apps
//
// Emitters lists the apps of fixtures/otel; PrepareApps lays them out
// next to the npm packages .ci/run installs ($AGENTCTL_NPM_OTEL: unset,
// the test is skipped; set and broken, it fails), since an ES module finds
// its packages only through a node_modules folder beside it.
package oteltest
