package session

import "testing"

func TestModelName(t *testing.T) {
	for _, c := range []struct{ provider, model, want string }{
		{"anthropic", "claude-sonnet-4-5", "anthropic/claude-sonnet-4-5"},
		{"cursor", "", "cursor (model not recorded)"},
		{"", "gpt-4o", "gpt-4o"},
		{"", "", "not recorded"},
	} {
		if got := ModelName(c.provider, c.model); got != c.want {
			t.Errorf("ModelName(%q, %q) = %q, want %q", c.provider, c.model, got, c.want)
		}
	}
}
