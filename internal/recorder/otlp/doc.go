// Package otlp turns session logs into OpenTelemetry traces and metrics
// with the GenAI semantic conventions (semconv v1.41: gen-ai-spans.md,
// gen-ai-agent-spans.md, gen-ai-metrics.md; and the names package genai
// lists from semantic-conventions-genai, where they moved after v1.41.1),
// and sends them over OTLP.
// Like Parquet, this is a projection of the log: everything here can be
// rebuilt from events, and the log stays the source of truth.
//
// # Spans
//
// One session is one trace; its id derives from the session id (TraceID),
// and every span id from the session id and the seq of the event that
// opened it (SpanID). Times are the recorded ones.
//
//	invoke_agent {agent}      one per run (from the first event after the previous
//	                          session_finished, or the header, to session_finished);
//	                          INTERNAL; gen_ai.agent.name (the spec's name) and
//	                          gen_ai.agent.id (its spec_hash: the same agent definition
//	                          has the same id across sessions); usage summed over its
//	                          chats, cache reads and writes included; error.type and an
//	                          error status on a failed, crashed or budget-exceeded run
//	                          (the reason's first word: provider_error, refused,
//	                          truncated, …, or budget_exceeded); reconciled, interrupted,
//	                          evaluation, budget_exceeded, error and subagent events
//	                          are span events
//	  chat {model}            one per model_call (a retried call: one per try), from
//	                          ts - latency_ms to ts; CLIENT; provider, server.address and
//	                          server.port (the spec's base_url, else the provider's
//	                          endpoint; none for the scripted model), request and
//	                          response model, gen_ai.request.max_tokens,
//	                          gen_ai.response.id, usage (input_tokens counts the cache
//	                          reads and writes, also given as
//	                          gen_ai.usage.cache_read.input_tokens and, for writes,
//	                          cache_write.input_tokens with the released
//	                          cache_creation.input_tokens beside it; reasoning tokens a
//	                          collected call kept), finish reasons, error.type (the
//	                          provider's own error type as recorded),
//	                          agentctl.response.refused, gen_ai.conversation.compacted
//	                          (true) on the first call after a compaction and each
//	                          try of it
//	  execute_tool {tool}     tool_intent .. tool_result (a result without an intent:
//	                          its latency); INTERNAL; tool name, call id, type;
//	                          error.type = the failure class when not ok (cancelled,
//	                          denied, timeout, exit_status, killed, invalid_arguments,
//	                          unknown_tool, path_escape, _OTHER)
//	  compaction              the compaction model call .. the compaction event, with
//	    chat {model}          the summarizing call as its child
//	  await_approval {tool}   approval_request .. approval_granted|denied: a child of
//	                          the run that asked, ending after it (the run stops to wait)
//
// The resource carries service.name, service.version and telemetry.sdk.*;
// the scope is ScopeName at agentctl's version. The spec records no
// temperature, so gen_ai.request.temperature is never set.
//
// Every span carries gen_ai.conversation.id = the session id. Attributes
// the conventions do not define use the agentctl.* namespace.
//
// A span is built only when the event that ends it is in the log; a run
// without session_finished (still going, or crashed) is ended at its last
// event. So exporting a log twice sends the same spans, which backends
// deduplicate, and live export sends exactly what a later export would.
//
// # Content
//
// Message content is added only with
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: system
// instructions and user messages on invoke_agent, gen_ai.output.messages
// on chat, tool call arguments and results on execute_tool. It is copied
// from the log, so it is redacted exactly as the log is. The full
// gen_ai.input.messages of each chat (the projection) is not attached.
//
// # Metrics
//
// gen_ai.client.token.usage ({token}) and gen_ai.client.operation.duration
// (s), histograms with the conventions' bucket boundaries, recorded per
// model call during a live run. They are not re-exported from logs:
// they aggregate over the run's own time, and the spans carry the numbers.
//
// # Live export and its costs
//
// Live is a runner observer: Event builds spans as events become durable
// and hands them to the SDK's batch processor (queue QueueSize, dropped
// when full, never waited for). Exports run in the background with no
// retries and the OTEL_EXPORTER_OTLP_TIMEOUT deadline; Shutdown flushes
// within FlushTimeout and returns a Report whose Warning is one line with
// the number of spans that did not get through. With no OTLP endpoint in
// the environment nothing is built at all.
//
// Why spans are built as data rather than with a Tracer: a span's start
// comes from the log (a chat started latency_ms before its model_call was
// recorded; a tool span opens at tool_intent), its ids must derive from
// (session, seq), and export of an old log must produce the very same
// spans. Building ReadOnlySpan values from events gives one code path for
// live export, export otlp and trace --json, testable without an exporter;
// a Tracer would need a custom IDGenerator fed through the context and
// explicit timestamps at every call, for the same result.
//
// # Example
//
//	cfg, _ := otlp.ConfigFromEnv(os.Getenv)
//	spans := cfg.SessionSpans(id, events)
//	err := otlp.Export(ctx, cfg, spans)      // or otlp.WriteJSON(w, spans)
//	err = cfg.WriteSessionJSON(w, id, each) // the JSON as the events come
//
// # Concurrency
//
// Live's methods may be called from any goroutine; they are serialized.
// Spans, WriteJSON, WriteSessionJSON and Export hold no shared state.
package otlp
