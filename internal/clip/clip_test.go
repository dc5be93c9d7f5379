package clip_test

import (
	"testing"
	"unicode/utf8"

	"github.com/agentctl/agentctl/internal/clip"
)

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(string, int) string
		in   string
		n    int
		want string
	}{
		{"runes short", clip.Runes, "héllo", 5, "héllo"},
		{"runes cut", clip.Runes, "héllo", 2, "hé…"},
		{"runes zero", clip.Runes, "héllo", 0, "…"},
		{"runes empty", clip.Runes, "", 3, ""},
		{"runes bytes over n, runes not", clip.Runes, "ééé", 3, "ééé"},
		{"bytes short", clip.Bytes, "abc", 3, "abc"},
		{"bytes cut", clip.Bytes, "abcdef", 3, "abc…"},
		{"bytes inside a rune", clip.Bytes, "aé", 2, "a…"},
		{"bytes inside a 4-byte rune", clip.Bytes, "a😀b", 3, "a…"},
		{"bytes zero", clip.Bytes, "abc", 0, "…"},
		{"tail short", clip.Tail, "abc", 3, "abc"},
		{"tail cut", clip.Tail, "abcdef", 2, "…ef"},
		{"tail inside a rune", clip.Tail, "éa", 2, "…a"},
		{"tail inside a 4-byte rune", clip.Tail, "a😀b", 3, "…b"},
	} {
		got := tc.f(tc.in, tc.n)
		if got != tc.want {
			t.Errorf("%s: (%q, %d) = %q, want %q", tc.name, tc.in, tc.n, got, tc.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("%s: %q is not valid UTF-8", tc.name, got)
		}
	}
}
