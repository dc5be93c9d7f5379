// Package provider is the model boundary of the runner: one Complete call
// sends the projected messages of a turn to a model and streams one
// assistant turn back, normalised so that nothing above this package knows
// which provider answered. The boundary's types (Provider, Request,
// Response, Error) are declared in internal/modelapi, a leaf, and aliased
// here; this package holds the clients and the stream parsers, which each
// registered model API (internal/modelapi/<name>) uses for its Client and
// Wire. Which client a spec gets is the registry's answer, not a switch
// here.
//
// # Implementations
//
//   - Scripted (NewScripted) answers from a Script. It is the in-memory
//     implementation: fixtures, tests and a first run need no network and
//     no API key, and the same script gives the same tool call ids, usage
//     and summaries on every run, which replay and crash tests rely on.
//   - NewOpenAI speaks Chat Completions through the official SDK, so the
//     same code serves api.openai.com and OpenAI-compatible servers (vLLM,
//     llama.cpp, Ollama) by base_url. Chat Completions rather than the
//     Responses API because that is what the compatible servers implement.
//   - NewAnthropic speaks the Messages API through the official SDK.
//
// Both live providers always stream: streaming is what lets an interrupted
// run keep the text the model had produced so far.
//
// # Example
//
//	p, err := provider.NewOpenAI(provider.OpenAIConfig{BaseURL: "http://localhost:11434/v1"})
//	if err != nil { … }
//	resp, err := p.Complete(ctx, provider.Request{Model: "llama3.1", Messages: msgs, Tools: tools},
//		func(delta string) { fmt.Fprint(os.Stderr, delta) })
//	var perr *provider.Error
//	switch {
//	case errors.Is(err, context.Canceled): // record resp.Text as interrupted
//	case errors.As(err, &perr):            // perr.Status, perr.Type, perr.Retryable
//	}
//
// # Normalisation
//
// Response is the same for every provider, because the log records it and
// replay must not care where it came from:
//
//   - FinishReason is "stop", "tool_calls", "length" or "content_filter"
//     (Anthropic's end_turn/stop_sequence, tool_use, max_tokens and refusal
//     map onto these); anything else is passed through.
//   - Tool call arguments are always valid JSON. A model that streams no
//     arguments (Anthropic sends "" for a tool without parameters) or broken
//     ones (a stream cut at max_tokens) gets `{}`, without an error: a
//     malformed call is the tool's problem to report back to the model, not
//     a reason to fail the run.
//   - Usage comes from the stream itself: OpenAI's include_usage chunk;
//     Anthropic's input from message_start and output from the last
//     message_delta (which also wins for input when it repeats it).
//   - InputTokens is what the provider bills as input, cache included:
//     OpenAI's prompt_tokens (which holds its cached_tokens); Anthropic's
//     input_tokens + cache_read_input_tokens + cache_creation_input_tokens
//     (summed over usage.iterations when a server-side compaction sampled
//     more than once). CacheReadTokens and CacheCreationTokens keep the
//     breakdown.
//   - CostUSD comes from a small price table (pricing.CostOf), each part at its
//     own rate: uncached input, cache reads, cache writes (five-minute and
//     one-hour), output. Unknown models cost 0 rather than a guess.
//   - A refusal is Refusal, not Text: OpenAI's delta.refusal, Anthropic's
//     stop_reason refusal.
//
// # Request mapping
//
// The runner hands over the provider-neutral projection (session.Message).
// For OpenAI it maps one to one. For Anthropic, system messages move to the
// system parameter, tool messages become tool_result blocks in a user
// message, and consecutive messages of one role merge into one message, so
// the results of parallel tool calls arrive together in the user message
// right after the tool_use blocks, as the API requires. Empty messages are
// dropped (the API rejects empty text). The Purpose of a request changes
// nothing on the wire: only the scripted model looks at it.
//
// # Retries and errors
//
// 408, 409, 429, 5xx (unless x-should-retry says false) and connection
// failures are retried with backoff, honouring Retry-After, and so is a
// transient error event inside a 200 stream (Anthropic's overloaded_error,
// say), but only while no text has been streamed, since a retry would show
// the caller the same text twice. MaxRetries bounds them. The retries are
// made here, not by the SDKs (whose retries are off), so that each failed
// try is reported in Response.Attempts and the log shows it. The runner
// never retries: what reaches it is final for this call and comes as an
// *Error with the HTTP status of a failed response (none for an error
// event in a 200 stream: InStream, Status 0), the provider's error type
// and message, and Retryable. Errors for 401 and 403 carry a hint naming
// the API key variable. Cancellation is never an *Error: Complete returns
// ctx.Err() with the partial Response.
//
// # Concurrency
//
// The live providers are safe for concurrent use. Scripted is not: it
// serves turns from a counter, in order.
//
// # Scripted models
//
// A script is YAML, parsed by the caller with KnownFields(true):
//
//	summary: "optional answer to compaction requests"
//	turns:
//	  - text: "Let me look."
//	    tool_calls:
//	      - name: read_file
//	        args: {path: README.md}   # a mapping, kept as JSON in key order
//	  - text: "Done."
//	    usage: {input_tokens: 120, output_tokens: 7}   # else estimated
//	    delay: 2s                                      # sleep half-way through the text
//	  - error: "simulated provider failure"
//	threads:                        # side conversations of a proxied client
//	  - system: "You are a title generator."   # text its system prompt contains
//	    turns:
//	      - text: "Mailer service overview"
//
// A thread answers the calls whose system text contains its system (the
// first such thread; Script.For), turn N to the thread's N-th call; every
// other call is answered by turns. agentctl proxy records such a call as
// a side thread, a conversation of its own whose calls it counts apart
// (internal/proxy, session.Route), so the agent's conversation gets the
// same turns whether the client sent its side call before, between or
// after them; matching the system text, not the order, is what keeps a
// recording deterministic when the client's order is not. agentctl's own
// agent makes no side calls: its scripted model serves turns only.
//
// Tool call ids are "call_<turn>_<index>" (turn 1-based, index 0-based).
// Estimated usage is input = characters of the request's messages / 4 + 1
// and output = characters of text and arguments / 4 + 1. A compaction
// request returns Script.Summary, else Digest of the messages, and does not
// consume a turn; neither does a turn cancelled during its delay, so a
// resumed run (SetTurn) serves it again. Asking for more turns than the
// script has is an error matching ErrScriptExhausted.
package provider
