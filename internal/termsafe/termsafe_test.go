package termsafe

import (
	"bytes"
	"testing"
)

func TestString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text\nwith\ttabs", "plain text\nwith\ttabs"},
		{"windows\r\nline", "windows\r\nline"},
		{"\x1b[2J\x1b]0;pwned\x07", `\x1b[2J\x1b]0;pwned\x07`},
		{"over\rwrite", `over\x0dwrite`},
		{"back\bspace\x7f", `back\x08space\x7f`},
		{"c1 \u009b31m", `c1 \x9b31m`},
		{"bidi \u202eevil", `bidi \u202eevil`},
		{"bad utf8 \xff!", `bad utf8 \xff!`},
		{"ünïcödé ✓", "ünïcödé ✓"},
	}
	for _, tt := range tests {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWriter(t *testing.T) {
	var b bytes.Buffer
	n, err := Writer(&b).Write([]byte("a\x1bb\n"))
	if err != nil || n != 4 || b.String() != "a\\x1bb\n" {
		t.Fatalf("Write = %d, %v; wrote %q", n, err, b.String())
	}
}
