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

// TestWorkflowCommands is issue 38 finding 12: no recorded text starts a
// line of output with "::" (a GitHub Actions workflow command), and Line
// keeps a recorded string on one line.
func TestWorkflowCommands(t *testing.T) {
	tests := []struct{ in, str, line string }{
		{"lookup\n::add-mask::agentctl\n::stop-commands::x", `lookup` + "\n" + `\x3a:add-mask::agentctl` + "\n" + `\x3a:stop-commands::x`,
			`lookup\n::add-mask::agentctl\n::stop-commands::x`},
		{"::warning::hi", `\x3a:warning::hi`, `\x3a:warning::hi`},
		{"  \t::error file=a.go::x", "  \t" + `\x3a:error file=a.go::x`, `  \t::error file=a.go::x`}, // one line that starts "  \t"
		{"a\r\n ::group::x", "a\r\n " + `\x3a:group::x`, `a\r\n ::group::x`},
		{"  ::x", `  \x3a:x`, `  \x3a:x`},
		{"std::vector and a::b", "std::vector and a::b", "std::vector and a::b"},
		{"x :: y", "x :: y", "x :: y"},
		{"tab\there", "tab\there", `tab\there`},
	}
	for _, tt := range tests {
		if got := String(tt.in); got != tt.str {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.str)
		}
		if got := Line(tt.in); got != tt.line {
			t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.line)
		}
	}
	// The writer follows a line's start across writes.
	var b bytes.Buffer
	w := Writer(&b)
	for _, p := range []string{"name: ", "::not-a-start\n", "  ", "::add-mask::x\n", ":", ":y\n"} {
		w.Write([]byte(p))
	}
	if want := "name: ::not-a-start\n  " + `\x3a:add-mask::x` + "\n" + `\x3a` + ":y\n"; b.String() != want {
		t.Errorf("Writer wrote %q, want %q", b.String(), want)
	}
}
