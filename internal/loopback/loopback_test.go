package loopback

import (
	"net/http/httptest"
	"testing"
)

func TestHost(t *testing.T) {
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"127.0.0.1", true}, {"127.0.0.1:4318", true}, {"127.1.2.3", true}, {"localhost", true}, {"LOCALHOST:80", true},
		{"[::1]:4317", true}, {"::1", true},
		{"0.0.0.0", false}, {"", false}, {"10.0.0.1:4318", false}, {"example.com", false}, {"localhost.example.com", false}, {"[::]:4318", false},
	} {
		if got := Host(tc.host); got != tc.want {
			t.Errorf("Host(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
}

func TestBrowserRequest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		host    string
		headers map[string]string
		foreign bool
	}{
		{"exporter", "127.0.0.1:4318", nil, false},
		{"fetch mode only", "localhost:4318", map[string]string{"Sec-Fetch-Mode": "cors"}, false},
		{"origin", "127.0.0.1:4318", map[string]string{"Origin": "https://evil.example"}, true},
		{"same-site fetch", "127.0.0.1:4318", map[string]string{"Sec-Fetch-Site": "same-site"}, true},
		{"rebinding", "evil.example:4318", nil, true},
	} {
		r := httptest.NewRequest("POST", "http://x/v1/traces", nil)
		r.Host = tc.host
		for k, v := range tc.headers {
			r.Header.Set(k, v)
		}
		if got := BrowserRequest(r); (got != "") != tc.foreign {
			t.Errorf("%s: BrowserRequest = %q, want foreign %v", tc.name, got, tc.foreign)
		}
	}
}

func TestTokenOK(t *testing.T) {
	for _, tc := range []struct {
		got, want string
		ok        bool
	}{{"s3cret", "s3cret", true}, {"s3cre", "s3cret", false}, {"", "s3cret", false}, {"", "", false}, {"x", "", false}} {
		if ok := TokenOK(tc.got, tc.want); ok != tc.ok {
			t.Errorf("TokenOK(%q, %q) = %v, want %v", tc.got, tc.want, ok, tc.ok)
		}
	}
}
