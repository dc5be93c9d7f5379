package modelapi

import "net/http"

// The abilities below are optional: a wire that has one implements it,
// and the proxy asks for it (as it does ModelSetter and Sniffer). A wire
// without them is served as Wire says.

// PositionedParser is implemented by a wire whose answers carry no tool
// call ids (Gemini's): ParseResponseAt names each call by its place in
// the conversation, at being the index the answer takes (the request's
// message count, system text not counted), as its ParseRequest names the
// calls of the next request's history, so that an answer's call and the
// next request's copy of it are one call. The proxy, which knows at,
// calls it in place of ParseResponse.
type PositionedParser interface {
	ParseResponseAt(body []byte, stream bool, reqModel string, at int) (Response, error)
}

// QueryEncoder is implemented by a wire whose answer's shape the
// request's query picks (Gemini's streamGenerateContent: SSE with
// ?alt=sse, else a JSON array of chunks).
type QueryEncoder interface {
	NewEncoderQuery(w http.ResponseWriter, stream bool, rawQuery, id, model string) Encoder
}

// CountAnswerer is implemented by a wire whose token count route answers
// otherwise than Anthropic's {"input_tokens": n} (Gemini's countTokens:
// {"totalTokens": n}): CountBody is the answer of the proxy's estimate.
type CountAnswerer interface {
	CountBody(tokens int) []byte
}
