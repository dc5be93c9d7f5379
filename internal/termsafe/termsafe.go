// Package termsafe makes recorded text safe to print on a terminal.
//
// Everything agentctl shows a person (a tool's output, a model's text, a
// file name) was written by an agent or by a program it ran, so it may hold
// escape sequences that clear the screen, retitle the window, rewrite what
// was printed before or hide text (a bidirectional override). Human-readable
// output passes through String or Writer; JSON output needs nothing more,
// since encoding/json escapes control characters itself.
//
// Newlines and tabs are kept, carriage returns too when followed by a
// newline; every other C0 control, DEL, the C1 controls and the Unicode
// bidirectional controls become visible escapes (\x1b, \u202e), so the
// reader sees that they were there.
package termsafe

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// unsafe reports whether r must not reach a terminal as it is.
func unsafe(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// String returns s with every control character escaped (see the package
// documentation). Invalid UTF-8 bytes are escaped as \xNN too. A string
// with nothing to escape is returned as it is, without copying.
func String(s string) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || (unsafe(r) && !crlf(s, i, r)) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafe(r) && !crlf(s, i, r):
			if r < 0x100 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// crlf reports whether the rune at s[i] is the \r of a \r\n line ending,
// which a terminal renders as a plain line break.
func crlf(s string, i int, r rune) bool {
	return r == '\r' && i+1 < len(s) && s[i+1] == '\n'
}

// Writer returns a writer that escapes what is written to w as String
// does. Writes are escaped one at a time, so a multi-byte character split
// across two writes is escaped byte by byte; callers write whole lines.
func Writer(w io.Writer) io.Writer { return writer{w} }

type writer struct{ w io.Writer }

func (w writer) Write(p []byte) (int, error) {
	s := String(string(p))
	if _, err := io.WriteString(w.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}
