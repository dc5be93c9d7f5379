package modelapi

import (
	"reflect"
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
