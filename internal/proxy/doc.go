// Package proxy is agentctl's model proxy: an HTTP server that speaks the
// providers' own wire protocols, so that any agent program (one agentctl
// does not drive) can be recorded, replayed offline and forked at the one
// boundary every agent crosses, its model API.
//
// # Endpoints
//
// OpenAI: POST /v1/chat/completions, POST /v1/responses, GET /v1/models
// (and /v1/models/{id}). Anthropic: POST /v1/messages, POST
// /v1/messages/count_tokens, with whatever query string (?beta=true) and
// headers (anthropic-beta, anthropic-version) the client sends. Streaming
// (SSE) and not. The same paths are served below two optional prefixes:
// /t/<token> (the token, when Config.Token is set) and /s/<session> (the
// session the calls belong to), so a client's base URL can be
// http://127.0.0.1:PORT/s/<session>/v1. A trailing /v1 is optional, as the
// Anthropic SDK's base URL has none. GET /v1/models/{id} takes one path
// segment: an id with a slash, a backslash or ".." (encoded or not) is a
// 404, so a client cannot reach another path of the provider's host.
//
// # Who may call
//
// Without Config.Token, only local programs: a request a browser marks as
// a web page's (an Origin header, Sec-Fetch-Site other than none) or
// whose Host is not loopback (DNS rebinding) is refused with a 403
// permission_error, since a page the user visits can reach a loopback
// port. With a token, whoever sends it. The SDKs send none of these.
//
// # Wires
//
// The proxy knows no provider: the routes it serves, how a request reads
// into the session's messages, how an answer is parsed, how a scripted or
// replayed answer is rendered, the error shape and the credential header
// are those of the registered model API whose route the request took
// (internal/modelapi; this package imports modelapi/all). A call of an
// API no registered wire speaks is an error, never read as another's.
//
// # API
//
//	srv, err := proxy.New(proxy.Config{
//		Backend: proxy.NewScripted(script, ""),        // or NewUpstream(url, nil), NewReplay(...)
//		Sink:    proxy.NewSessionSink(sess),           // record into a session you opened, or:
//		// Open: proxy.StoreSessions{Store: store}.Open // a session per conversation
//		Policy:  func(ctx context.Context, c *proxy.Call) *proxy.Refusal { … },
//	})
//	go http.Serve(listener, srv)                       // any listener: loopback, a netns socket
//	…
//	srv.Close()                                        // finishes the sessions Open made
//	sink.Close()                                       // a SessionSink you gave: closes its artifact file
//
// A Backend answers calls by writing wire bytes: Scripted (agentctl's
// scripted model, turn N answers call N of each conversation), Upstream
// (forward with the client's credentials, or WithKey's, stream back as
// it arrives, gzip passed through when the client takes it),
// Replay (serve the recorded bytes of a session; strict or not; on a miss
// fail or forward to an Upstream; Until N then live: TurnsThrough gives
// the N of a seq, and AfterTurn starts a scripted live model at its first
// turn). The Policy hook sees
// every parsed model call (API, model, max tokens, messages, what the
// conversation spent) before the backend does, and may refuse it with a
// Refusal the client gets in its provider's error shape.
//
// # What is recorded
//
// Whatever the backend, the proxy parses the bytes it sent back with the
// call's wire (modelapi.Wire.ParseResponse: the live providers' own stream
// parsers and normalisation) and appends, in one durable Append per call:
//
//   - for what the request adds to the history: user_message, tool_result
//     (the agent's tool output, as its next request carries it; status
//     error for an Anthropic is_error result), assistant_message (turns the
//     client wrote itself, attrs from_request); a compaction when the
//     history no longer extends the previous one (through = the last seq,
//     summary = what the agent put in place of the dropped messages);
//   - assistant_message (text, tool calls, refusal, finish_reason when cut
//     or filtered, attrs.thinking for reasoning) and model_call (request
//     digest via session.Digest over system + messages + tool names,
//     model, tokens with the cache breakdown, cost, latency, finish reason,
//     response id, error and error_type; attrs: recorded_by "proxy", api,
//     path, query, stream, status, turn, ttft_ms, request_artifact,
//     response_artifact);
//   - a malformed request: a 400 in the provider's error shape and a
//     model_call with error_type invalid_request_error; an unreachable
//     upstream: a 502 and error_type connection_error; a refusal by the
//     Policy: its status and a model_call with attrs.refused; a client
//     that goes away mid-stream: model_call error_type client_disconnected
//     and an interrupted event with the partial text; an answer that
//     broke off (the upstream dropped mid-stream): the error recorded and
//     the client's connection aborted, so that its SDK raises; an answer
//     larger than Config.MaxRecord: passed on in full, recorded as
//     error_type response_too_large with attrs.response_bytes.
//
// The raw request and response bodies are kept, redacted, in one
// append-only artifact per session (artifacts/proxy-bodies), named by
// reference in the model_call ("artifacts/proxy-bodies#<offset>+<length>"),
// so a replay serves the exact bytes. The artifact is fsync'd at the same
// time as the log append, and the client's answer completes only when
// both are durable. Credentials (Authorization, x-api-key, cookies) are
// headers, and headers are never recorded.
//
// # Durability and latency
//
// A call's events are appended (one group-committed Append) after the
// last byte of the answer was written to the client but before the
// response ends, so when the client's SDK returns, the call is on disk.
// The user message and tool results of a request are appended with its
// answer, not before: a crash mid-call loses nothing, because the next
// request carries them again.
//
// # Sessions
//
// With Config.Sink every call goes to that one session (the runner's: it
// wrote the header and finishes it). With Config.Open (standalone
// `agentctl proxy`) calls are grouped into conversations: exactly, by the
// /s/<session>/ of the base URL (that id becomes the session id); else by
// history prefix: a request whose messages extend a conversation's last
// request and answer belongs to it (the longest such), one that repeats a
// conversation's first user message continues it after a compaction, and
// anything else starts a new session. Two agents that start with the same
// prompt at once cannot be told apart by prefix: give them /s/ URLs.
//
// # Side threads
//
// A named conversation (/s/, or a Sink with Config.OpenSide) may carry
// calls that are not the agent's conversation at all: opencode asks for
// a title with its own system prompt, no tools and a message of its own;
// Claude Code checks its quota with a one-word call. Recorded in the
// session they would break its one history (a compaction that never
// happened: diagnose warns the goal may be lost, replay verify diverges).
// So each call is routed by session.Route, the one rule the OTLP mapping
// (internal/otelsession) groups by too: a call that extends a thread's
// history continues it; one that shares the system text, a tool or its
// first message with the session's conversation is the agent's (a
// compaction when it rewrote the history); anything else starts a side
// thread. A side thread is a session of its own, session.SideThreadID
// (<id>-side1, …), whose header names its parent (parent_session_id,
// attrs side_thread_of and side_thread), as a subagent's does: each
// thread stays one linear conversation that projection, replay verify,
// diagnose and bundle read as any session, with no event kind or column
// added, and the lineage (recorder.RelSideThread) lists it under its
// parent. The one-log alternative (events tagged with a thread) would
// have made every reader of a log filter by thread.
//
// The session's conversation is the thread that came first: the proxy
// cannot know, when it must make a call durable, which conversation the
// agent will go on with (opencode sends its title call before the
// agent's first turn, so there the title is the session's thread and the
// agent's conversation side thread 1). Replay does not depend on it: a
// Replay given the side threads (ReplayConfig.Sides, SideThreads) serves
// each thread of the program from the recorded thread that shares its
// first request (session.Shares), else the first one not taken, whatever
// order the calls interleave in; within a thread, turn N is the thread's
// N-th call. All threads of a conversation are served under its lock, so
// they are recorded in the order they came.
//
// # Concurrency
//
// Server is safe for concurrent use. Calls of one conversation are served
// one at a time, in arrival order; different conversations in parallel.
package proxy
