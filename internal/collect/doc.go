// Package collect is agentctl's OTLP receiver: the transport half of
// `agentctl collect`. It takes OpenTelemetry trace and log exports over
// OTLP/HTTP (POST /v1/traces and /v1/logs, protobuf or JSON, optionally
// gzip) and OTLP/gRPC (TraceService and LogsService), hands each decoded
// request to a Sink, and answers the exporter from what the Sink says,
// as the OTLP specification asks. It maps nothing itself: turning spans
// into session events is internal/otelsession's job, behind Sink.
//
// # Answers
//
// An export is answered success only when the Sink returned, and a Sink
// returns only once what it accepted is durable, so an acknowledged span
// survives a kill -9 of the collector. What the Sink refused comes back
// as OTLP's partial_success (rejected_spans or rejected_log_records, and
// an error_message naming each reason), which exporters do not retry.
// Over HTTP the response has the request's Content-Type; failures carry
// a google.rpc.Status in that encoding:
//
//	200  accepted (maybe partially: partial_success)
//	400  not an OTLP request (undecodable protobuf or JSON, bad ids,
//	     values nested deeper than otelsession.MaxDepth)
//	401  a token is configured and the request does not carry it
//	403  no token is configured and a web page sent the request
//	404  not /v1/traces or /v1/logs
//	405  not POST
//	408  the body stalled (nothing for Config.StallTimeout) or did not
//	     arrive within Config.ReadTimeout: cut, its budget released
//	413  over the request limit, before or after gunzip (a gzip bomb),
//	     or what it would take decoded is over MaxInflightBytes
//	415  neither application/x-protobuf nor application/json, or a
//	     Content-Encoding other than gzip
//	429  back-pressure: the in-flight memory budget is spent, or the Sink
//	     is busy (ErrBusy); Retry-After, the Sink's estimate of its
//	     backlog when its error has a RetryAfter method
//	503  the Sink failed (disk, closing), or cannot write sessions now
//	     (otelsession.ErrWritesFailing); Retry-After, retryable
//
// Over gRPC the same cases are INVALID_ARGUMENT, UNAUTHENTICATED,
// RESOURCE_EXHAUSTED (over the size limit: no RetryInfo, not retryable),
// RESOURCE_EXHAUSTED with a RetryInfo (back-pressure: retryable) and
// UNAVAILABLE.
//
// # Bounds
//
// Every request is hostile until decoded: the body is read up to
// Config.MaxRequestBytes, gunzipped up to Config.MaxDecodedBytes, and its
// memory (wire bytes plus what decoding will allocate, counted on the
// bytes by otelsession.DecodeCost / JSONDecodeCost: messages, values,
// strings) is reserved from Config.MaxInflightBytes before decoding, on
// HTTP and on gRPC alike (gRPC's codec counts and reserves before it
// decodes); a request that does not
// fit now is answered 429 (gRPC RESOURCE_EXHAUSTED + RetryInfo) so the
// exporter backs off instead of the collector growing. A refused export's
// body is still read (not kept) before the answer, a 413's too up to
// four times the limit: an answer and a close while the exporter writes
// is a broken pipe to it, not a 429 or 413, and it retries the batch.
//
// Clients that connect and do not send cannot hold the collector either:
// a request's headers must come within 10 s, its body must not stall for
// Config.StallTimeout nor take longer than Config.ReadTimeout; an idle
// connection is closed after Config.IdleTimeout (HTTP keep-alive, gRPC
// MaxConnectionIdle; a gRPC handshake within 10 s); each listener serves
// Config.MaxConns connections at once (Listener, GRPCListener). Serve
// HTTP with HTTPServer. The gRPC listener answers a client that speaks
// HTTP/1 (an OTLP/HTTP exporter pointed at the gRPC port) with a 400
// naming the HTTP port, and logs it. Limits on what a session may hold
// (spans, attribute sizes) are the Sink's.
//
// # Forwarding
//
// A Forwarder fans each accepted export out to another OTLP/HTTP
// collector: for an HTTP export the same bytes with the same Content-Type
// and Content-Encoding, for a gRPC one its protobuf encoding. It is
// asynchronous behind a bounded queue, never delays an acknowledgement,
// and a forward target that is down is logged and counted, never fatal.
//
// # Example
//
//	srv, err := collect.New(collect.Config{Sink: ingester})
//	...
//	hs := srv.HTTPServer()
//	go hs.Serve(srv.Listener(httpListener))
//	g := srv.GRPC()
//	go g.Serve(srv.GRPCListener(grpcListener, httpListener.Addr().String()))
//	// on SIGTERM: httpServer.Shutdown, g.GracefulStop, forwarder Close,
//	// then ingester.Close (seal).
//
// # Concurrency
//
// A Server serves any number of requests at once; the Sink is called
// concurrently. Stats may be read at any time.
package collect
