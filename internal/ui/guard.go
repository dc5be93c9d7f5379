package ui

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"
)

// cookieName holds the token once a URL carrying it was opened, so links
// inside the app need not repeat it (and a pasted link leaks nothing).
const cookieName = "agentctl_ui"

// CSP lets the page load its own style, script and images and nothing
// else: no inline script or style, no frame, no form posting elsewhere.
const CSP = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// guard refuses what must not reach a page: an unknown Host (DNS
// rebinding), a request without the token, a cross-site request that is
// not the user following a link, and a write without the same origin and
// the CSRF field. It sets the headers every answer carries.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		// same-origin, not no-referrer: under no-referrer a browser sends
		// "Origin: null" with a form's POST, and the approvals page's forms
		// would fail the origin check; no other site gets a referrer.
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if s.hosts != nil && !s.hosts[strings.ToLower(r.Host)] {
			http.Error(w, "agentctl ui: unknown Host "+quoteHeader(r.Host)+"; open the URL agentctl ui printed", http.StatusMisdirectedRequest)
			return
		}
		ok, answered := s.authorized(w, r)
		if !ok {
			http.Error(w, "agentctl ui: this page needs the token; open the URL agentctl ui printed (it ends in ?token=...)", http.StatusUnauthorized)
			return
		}
		if answered {
			return
		}
		site := r.Header.Get("Sec-Fetch-Site")
		if site == "cross-site" && r.Header.Get("Sec-Fetch-Mode") != "navigate" {
			http.Error(w, "agentctl ui: cross-site request refused", http.StatusForbidden)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if !s.sameOrigin(r) {
				http.Error(w, "agentctl ui: a change must come from agentctl ui's own page (Origin "+quoteHeader(r.Header.Get("Origin"))+")", http.StatusForbidden)
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
			if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrf)) != 1 {
				http.Error(w, "agentctl ui: the form's CSRF field is missing or wrong; reload the page and try again", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// authorized accepts the token as a query parameter (the printed URL; it
// then sets the cookie and redirects to the URL without it, so the token
// stays out of the address bar, history and anything copied from them),
// as the cookie, or as a bearer header (scripts, curl). answered is true
// when the redirect was the answer.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) (ok, answered bool) {
	if tok := r.URL.Query().Get("token"); tok != "" {
		if !s.tokenOK(tok) {
			return false, false
		}
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		if r.Method == http.MethodGet {
			u := *r.URL
			q := u.Query()
			q.Del("token")
			u.RawQuery = q.Encode()
			u.Scheme, u.Host = "", ""
			http.Redirect(w, r, u.String(), http.StatusSeeOther)
			return true, true
		}
		return true, false
	}
	if c, err := r.Cookie(cookieName); err == nil && s.tokenOK(c.Value) {
		return true, false
	}
	if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && s.tokenOK(a) {
		return true, false
	}
	return false, false
}

func (s *Server) tokenOK(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) == 1
}

// sameOrigin is true when the write names this server as its origin (a
// browser always sends Origin on a POST).
func (s *Server) sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		// Not a browser (curl with the bearer token): no ambient
		// credentials to abuse, the token itself is the proof.
		_, err := r.Cookie(cookieName)
		return err != nil && strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	u, err := url.Parse(o)
	return err == nil && u.Scheme == "http" && strings.EqualFold(u.Host, r.Host)
}

func quoteHeader(s string) string {
	if len(s) > 100 {
		s = s[:100]
	}
	return "\"" + strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' {
			return '?'
		}
		return r
	}, s) + "\""
}
