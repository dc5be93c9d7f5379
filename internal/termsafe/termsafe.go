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
// reader sees that they were there. Line escapes newlines and tabs too,
// for a recorded string printed inside a line.
//
// # CI logs
//
// A CI runner reads a job's output as commands too: GitHub Actions obeys a
// line that starts with "::" (after spaces), so a tool name such as
// "lookup\n::add-mask::x" printed as it is would hide text from the log or
// stop the runner from reading later commands. String, Line and Writer
// escape the first colon of a "::" that starts a line (\x3a:), so no
// recorded text can start a line with it; agentctl never writes such a
// line of its own.
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

// Unsafe reports whether r is a control character String escapes: a C0
// control but newline and tab, DEL, a C1 control or a bidirectional
// control. For a renderer of another medium (an HTML page) that must
// show the same characters as visible escapes.
func Unsafe(r rune) bool { return unsafe(r) }

// Rune is the visible escape String writes for r (\x1b, \u202e).
func Rune(r rune) string {
	if r < 0x100 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}

// String returns s with every control character escaped (see the package
// documentation). Invalid UTF-8 bytes are escaped as \xNN too, and the
// first colon of a "::" that starts a line as \x3a. A string with nothing
// to escape is returned as it is, without copying.
func String(s string) string {
	out, _ := escape(s, true, false, false)
	return out
}

// Line returns s as String does, on one line: its newlines, carriage
// returns and tabs become \n, \r and \t. It is for a recorded string
// printed as part of a line (a name, a status, a message): the line stays
// one line, whatever the string holds.
func Line(s string) string {
	out, _ := escape(s, true, true, false)
	return out
}

// command reports whether s[i:] is the "::" of a GitHub Actions workflow
// command, given that only spaces and tabs precede it on its line (bol).
// The runner obeys a line of a job's stdout or stderr that starts with
// one (::add-mask::, ::stop-commands::, ::error file=…), so recorded text
// must never start a line with it.
func command(s string, i int, bol bool) bool {
	return bol && strings.HasPrefix(s[i:], "::")
}

// escape returns s escaped, bol telling whether s starts a line, and
// whether its end does; oneLine escapes line breaks and tabs too. With
// more, s is a piece of a stream: a ':' that starts a line at its end may
// be the first of a "::" the next piece ends, and is escaped.
func escape(s string, bol, oneLine, more bool) (string, bool) {
	keep := func(i int, r rune, size int, bol bool) bool {
		switch {
		case r == utf8.RuneError && size == 1:
			return false
		case oneLine && (r == '\n' || r == '\r' || r == '\t'):
			return false
		case unsafe(r) && !crlf(s, i, r):
			return false
		}
		return !command(s, i, bol) && !(more && bol && s[i:] == ":")
	}
	next := func(r rune, bol bool) bool { return r == '\n' || (bol && (r == ' ' || r == '\t')) }
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !keep(i, r, size, bol) {
			break
		}
		bol = next(r, bol)
		i += size
	}
	if i == len(s) {
		return s, bol
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case keep(i, r, size, bol):
			b.WriteString(s[i : i+size])
			bol = next(r, bol)
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
			bol = false
		case oneLine && r == '\n':
			b.WriteString(`\n`)
			bol = false
		case oneLine && r == '\r':
			b.WriteString(`\r`)
			bol = false
		case oneLine && r == '\t':
			b.WriteString(`\t`)
			bol = false
		case r == ':': // a workflow command's
			b.WriteString(`\x3a`)
			bol = false
		default:
			b.WriteString(Rune(r))
			bol = false
		}
		i += size
	}
	return b.String(), bol
}

// crlf reports whether the rune at s[i] is the \r of a \r\n line ending,
// which a terminal renders as a plain line break.
func crlf(s string, i int, r rune) bool {
	return r == '\r' && i+1 < len(s) && s[i+1] == '\n'
}

// Writer returns a writer that escapes what is written to w as String
// does; a line's start is followed across writes, so that a "::" written
// after a newline is escaped. Writes are escaped one at a time, so a
// multi-byte character split across two writes is escaped byte by byte;
// callers write whole lines.
func Writer(w io.Writer) io.Writer { return &writer{w: w, bol: true} }

type writer struct {
	w   io.Writer
	bol bool // what was written so far ends a line, or spaces after one
}

func (w *writer) Write(p []byte) (int, error) {
	s, bol := escape(string(p), w.bol, false, true)
	if _, err := io.WriteString(w.w, s); err != nil {
		return 0, err
	}
	w.bol = bol
	return len(p), nil
}
