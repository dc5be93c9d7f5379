package approval

import (
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	tests := []struct {
		a, b, want string
	}{
		{"", "x\ny\n", "+x +y"},
		{"a\nb\nc\n", "a\nB\nc\n", " a -b +B  c"},
		{"a\nb\n", "a\n", " a -b"},
		{"same\n", "same\n", " same"},
	}
	for _, tc := range tests {
		var got []string
		for _, l := range Diff(tc.a, tc.b) {
			got = append(got, l.Op+l.Text)
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("Diff(%q, %q) = %q, want %q", tc.a, tc.b, g, tc.want)
		}
	}
}
