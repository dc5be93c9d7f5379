package proxy

import (
	"net/http"

	"github.com/agentctl/agentctl/internal/modelapi"
)

// The answers the proxy makes itself (scripted, replayed, its errors) are
// rendered by the wire of the call (modelapi.Wire): this file only finds
// it.

type obj = modelapi.Obj

func marshal(v any) []byte { return modelapi.Marshal(v) }

// newEncoder is the encoder of c's wire for an answer with id and model;
// an API no wire speaks is an error (the proxy parsed c, so it has one).
func newEncoder(c *Call, model string, w http.ResponseWriter) (modelapi.Encoder, error) {
	api, _, _, err := c.wire()
	if err != nil {
		return nil, err
	}
	return api.Wire.NewEncoder(w, c.Stream, api.Wire.ResponseID(c.SessionID, c.Turn), model), nil
}

// errorBody is an error in the shape of api's wire: what the client's SDK
// turns into its own error type, so the agent shows the message. A request
// no wire claims (modelapi.Guess found none) gets the envelope every SDK
// reads a message from, {"error":{"type","message"}}, not a guessed
// provider's.
func errorBody(api API, typ, msg string) []byte {
	if a, _, err := modelapi.LookupWire(string(api)); err == nil {
		return a.Wire.ErrorBody(typ, msg)
	}
	return marshal(obj{"error": obj{"type": typ, "message": msg}})
}

// writeError answers with an error in api's shape.
func writeError(w http.ResponseWriter, api API, status int, typ, msg string) []byte {
	body := errorBody(api, typ, msg)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Should-Retry", "false")
	w.WriteHeader(status)
	w.Write(body)
	return body
}
