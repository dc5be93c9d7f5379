package modelapi

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestMatchPath(t *testing.T) {
	for _, tc := range []struct {
		pattern, path string
		want          map[string]string
		ok            bool
	}{
		{"/v1/chat/completions", "/v1/chat/completions", nil, true},
		{"/v1/chat/completions", "/v1/chat/completion", nil, false},
		{"/v1/models/{id}", "/v1/models/gpt-4o", map[string]string{"id": "gpt-4o"}, true},
		{"/v1/models/{id}", "/v1/models/", nil, false},
		{"/v1/models/{id}", "/v1/models/a/b", nil, false},
		{"/v1beta/models/{model}:generateContent", "/v1beta/models/gemini-2.5-flash:generateContent", map[string]string{"model": "gemini-2.5-flash"}, true},
		{"/v1beta/models/{model}:generateContent", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", nil, false},
		{"/v1beta/models/{model}:generateContent", "/v1beta/models/:generateContent", nil, false},
	} {
		got, ok := matchPath(tc.pattern, tc.path)
		if ok != tc.ok || (ok && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("matchPath(%q, %q) = %v, %v, want %v, %v", tc.pattern, tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

func TestLookupUnknownNamesKnown(t *testing.T) {
	_, err := Lookup("gemnii")
	var ue *UnknownError
	if !errors.As(err, &ue) {
		t.Fatalf("Lookup(gemnii) = %v, want an *UnknownError", err)
	}
	if !strings.Contains(err.Error(), `"gemnii"`) {
		t.Errorf("Lookup(gemnii) error %q does not name the asked name", err)
	}
	for _, p := range Providers() {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("Lookup(gemnii) error %q does not name known provider %s", err, p)
		}
	}
	if _, _, err := LookupWire("gemnii"); !errors.As(err, &ue) {
		t.Errorf("LookupWire(gemnii) = %v, want an *UnknownError", err)
	}
}
