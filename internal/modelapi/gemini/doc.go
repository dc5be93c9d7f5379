// Package gemini is Google's Gemini API as a model API of agentctl, one
// value of the registry (modelapi.Register in api.go: provider gemini,
// GEMINI_API_KEY, https://generativelanguage.googleapis.com): the client
// the runner calls (New: streamGenerateContent with SSE, key in
// x-goog-api-key), and the wire format the model proxy serves, records
// and replays (Route, ParseRequest, Parse, ParseError, ErrorBody,
// Encoder). It is one package so that everything Gemini-shaped is said
// once: how a request maps onto the session's messages, how an answer is
// read, how one is rendered.
//
// Beyond modelapi.Wire, its wire has ParseResponseAt (an answer's calls
// are named by the answer's place in the conversation, which only the
// proxy knows) and CountBody (countTokens answers {"totalTokens": n}),
// which the proxy asks for when a wire has them.
//
// # The wire format
//
// POST /v1beta/models/{model}:generateContent answers one
// GenerateContentResponse; :streamGenerateContent?alt=sse answers SSE
// events each carrying one (without alt=sse, a JSON array of them). The
// model is in the path, not the body. A request's contents alternate the
// roles user and model; a model turn's function calls are functionCall
// parts, their results functionResponse parts of the next user content.
//
// # Normalisation
//
//   - Function calls carry no id. CallID derives one from the call's
//     place in the conversation, which the next request repeats, so an
//     answer's call and the request's copy of it agree through the
//     proxy, replays and restarts. An id a client writes on a call in its
//     history (gemini-cli's list_directory_<epoch ms>_0) only pairs the
//     call with its function response; ids made by CallID are never sent
//     to the API.
//   - usageMetadata: InputTokens is promptTokenCount (which holds
//     cachedContentTokenCount, the CacheReadTokens) plus
//     toolUsePromptTokenCount; OutputTokens is candidatesTokenCount plus
//     thoughtsTokenCount, which are billed as output.
//   - finishReason STOP is stop (tool_calls when the answer calls a
//     function), MAX_TOKENS length; SAFETY, RECITATION,
//     PROHIBITED_CONTENT, BLOCKLIST, SPII, IMAGE_SAFETY and a prompt's
//     promptFeedback.blockReason are a refusal (content_filter, the text
//     in Refusal, else BlockedWithoutText and the reason).
//   - Thought parts (thought: true) are Thinking, not text.
//   - Errors are {"error":{"code","message","status"}}: the type recorded
//     is an ErrorInfo's reason when the details carry one, else the rpc
//     status (INVALID_ARGUMENT, RESOURCE_EXHAUSTED, …).
//
// # Concurrency
//
// The client may be called concurrently; an Encoder is one answer's.
package gemini
