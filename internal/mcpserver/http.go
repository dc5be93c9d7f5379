package mcpserver

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Handler serves srv over streamable HTTP to requests that carry the
// bearer token (Authorization: Bearer TOKEN), as the proxy and the UI
// demand theirs: the history is the user's, and a loopback port is open
// to every local process and to web pages that guess it.
func Handler(srv *mcp.Server, token string) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentctl mcp"`)
			http.Error(w, "agentctl mcp: missing or wrong bearer token: send Authorization: Bearer TOKEN (the token 'agentctl mcp --listen' printed, or --token)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
