// Package clip shortens recorded text for a line, a cell or an error
// message: one rule for every place that quotes an excerpt, so a cut
// never splits a character (a byte cut in the middle of one made invalid
// UTF-8, which the terminal escaping then showed as \xNN noise) and is
// always marked with an ellipsis.
package clip

import "unicode/utf8"

// Ellipsis marks where text was cut.
const Ellipsis = "…"

// Runes returns s cut to its first n characters, with an ellipsis when it
// cut: for what a person reads (a page cell, a finding, a divergence).
func Runes(s string, n int) string {
	if n < 0 {
		n = 0
	}
	if len(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + Ellipsis
		}
		i++
	}
	return s
}

// Bytes returns s cut to at most n bytes at a character boundary, with an
// ellipsis when it cut: for a bound on what a message may carry (hostile
// input quoted in an error, a tool's output in an assertion).
func Bytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < 0 {
		n = 0
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + Ellipsis
}

// Tail returns the last n bytes of s at most, starting at a character
// boundary, with an ellipsis before them when it cut: for the end of an
// output, where the error usually is.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < 0 {
		n = 0
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return Ellipsis + s[i:]
}
