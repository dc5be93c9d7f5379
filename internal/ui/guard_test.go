package ui

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestGuard sends each request the guard must refuse, and the ones it must
// let through, to a handler that answers 200 "reached".
func TestGuard(t *testing.T) {
	s, err := New(Options{Token: "0123456789abcdef0123"})
	if err != nil {
		t.Fatal(err)
	}
	s.hosts = hostsFor(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4321})
	h := s.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("reached")) }))
	cookie := &http.Cookie{Name: cookieName, Value: s.token}
	form := func(csrf string) string { return url.Values{"csrf": {csrf}}.Encode() }
	cases := []struct {
		name   string
		method string
		target string
		host   string
		header map[string]string
		cookie bool
		body   string
		want   int
	}{
		{name: "no token", target: "/runs", want: 401},
		{name: "wrong token", target: "/runs?token=nope", want: 401},
		{name: "wrong cookie", target: "/runs", header: map[string]string{"Cookie": cookieName + "=0123456789abcdef0124"}, want: 401},
		{name: "token in URL sets the cookie and drops it", target: "/runs?status=failed&token=" + s.token, want: 303},
		{name: "cookie", target: "/runs", cookie: true, want: 200},
		{name: "bearer", target: "/runs", header: map[string]string{"Authorization": "Bearer " + s.token}, want: 200},
		{name: "localhost", target: "/runs", host: "localhost:4321", cookie: true, want: 200},
		{name: "rebinding host", target: "/runs", host: "attacker.example:4321", cookie: true, want: 421},
		{name: "other port", target: "/runs", host: "127.0.0.1:4322", cookie: true, want: 421},
		{name: "cross-site fetch", target: "/api/x", cookie: true, header: map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"}, want: 403},
		{name: "cross-site link followed", target: "/runs", cookie: true, header: map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}, want: 200},
		{name: "post from own page", method: "POST", target: "/approve", cookie: true, header: map[string]string{"Origin": "http://127.0.0.1:4321"}, body: form(s.csrf), want: 200},
		{name: "post from another origin", method: "POST", target: "/approve", cookie: true, header: map[string]string{"Origin": "http://evil.example"}, body: form(s.csrf), want: 403},
		{name: "post without origin in a browser", method: "POST", target: "/approve", cookie: true, body: form(s.csrf), want: 403},
		{name: "post without csrf", method: "POST", target: "/approve", cookie: true, header: map[string]string{"Origin": "http://127.0.0.1:4321"}, body: form(""), want: 403},
		{name: "post with wrong csrf", method: "POST", target: "/approve", cookie: true, header: map[string]string{"Origin": "http://127.0.0.1:4321"}, body: form(strings.Repeat("0", 64)), want: 403},
		{name: "post by a script with the bearer", method: "POST", target: "/approve", header: map[string]string{"Authorization": "Bearer " + s.token}, body: form(s.csrf), want: 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := c.method
			if m == "" {
				m = "GET"
			}
			r := httptest.NewRequest(m, c.target, strings.NewReader(c.body))
			r.Host = "127.0.0.1:4321"
			if c.host != "" {
				r.Host = c.host
			}
			if c.body != "" {
				r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			for k, v := range c.header {
				r.Header.Set(k, v)
			}
			if c.cookie {
				r.AddCookie(cookie)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != c.want {
				t.Fatalf("status %d, want %d: %s", w.Code, c.want, w.Body.String())
			}
			if got := w.Header().Get("Content-Security-Policy"); got != CSP {
				t.Errorf("CSP %q", got)
			}
			if c.want != 200 && strings.Contains(w.Body.String(), "reached") {
				t.Errorf("a refused request reached the page")
			}
			if c.want == 303 {
				loc := w.Header().Get("Location")
				if strings.Contains(loc, "token") || !strings.Contains(loc, "status=failed") {
					t.Errorf("redirect to %q: want the URL without the token, filters kept", loc)
				}
				if sc := w.Header().Get("Set-Cookie"); !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Strict") {
					t.Errorf("cookie %q: want HttpOnly and SameSite=Strict", sc)
				}
			}
		})
	}
}

func TestShortTokenRefused(t *testing.T) {
	if _, err := New(Options{Token: "short"}); err == nil {
		t.Fatal("a 5-character token was accepted")
	}
}

// TestNonLoopbackAcceptsAnyHost: on a non-loopback listen the host is
// whatever name the machine is reached by; the token keeps others out.
func TestNonLoopbackAcceptsAnyHost(t *testing.T) {
	if h := hostsFor(&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 80}); h != nil {
		t.Fatalf("hosts %v for a non-loopback address", h)
	}
}
