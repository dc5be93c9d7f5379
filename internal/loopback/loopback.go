// Package loopback decides whether an HTTP listener's peer is a program
// on this machine, for agentctl's local servers (the model proxy, the
// OTLP collector) that serve loopback without a token: Host says whether
// an address names the loopback, BrowserRequest whether a request that
// reached a loopback port was sent by a web page instead, and TokenOK
// compares a client's token with the server's in constant time.
//
// The functions are pure and safe for concurrent use.
package loopback

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// Host reports whether host (a Host header or --listen address, with or
// without a port) names this machine's loopback: localhost or a loopback
// IP.
func Host(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// BrowserRequest says why r may come from a web page rather than a local
// program, "" when nothing says so. A page the user visits can reach a
// loopback port: a form's text/plain POST needs no CORS preflight, and
// DNS rebinding makes the page's own origin resolve to 127.0.0.1. Browsers
// mark what they send (Origin on every POST and cross-origin fetch,
// Sec-Fetch-Site on every fetch) and keep the page's host name in Host;
// SDKs and exporters send neither header (Node's fetch sends
// Sec-Fetch-Mode only), and reach the server by a loopback address. The
// servers using this serve no pages, so even a same-origin request is a
// foreign one.
func BrowserRequest(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "" {
		return fmt.Sprintf("the request has an Origin header (%q): a web page sent it", o)
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "none" {
		return fmt.Sprintf("the request has Sec-Fetch-Site: %s: a web page sent it", site)
	}
	if r.Host != "" && !Host(r.Host) {
		return fmt.Sprintf("the request's Host %q is not a loopback address (a DNS rebinding page, or a client that reaches the server by another name)", r.Host)
	}
	return ""
}

// TokenOK reports whether got is the server's token want, in time that
// does not depend on where they differ. An empty want accepts nothing:
// callers check "no token configured" themselves.
func TokenOK(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
