// Package redteam is the red-team corpus the page tests record into
// sessions (every field a page may show) before they load the pages in
// a real browser: one list, so every page is attacked with the same
// strings and a new one reaches them all.
package redteam

import "strings"

// Strings are markup, event handlers, a script end, attribute breakouts
// with either quote, a javascript: URL, terminal control and a bidi
// override. A page that runs any of them sets window.__pwned or the
// title "pwned", or grows an element (img, svg) from recorded text.
var Strings = []string{
	`<script>window.__pwned=1;document.title="pwned"</script>`,
	`<img src=x onerror="window.__pwned=2">`,
	`"><svg onload="window.__pwned=3">`,
	`</pre></div></td></tr></table><img src=x onerror=window.__pwned=4>`,
	"javascript:window.__pwned=5",
	`' onmouseover='window.__pwned=6`,
	"\x1b[31mred\x1b[0m \u202eevil",
}

// Text is prefix (if any) and every string of the corpus, in one
// recorded text.
func Text(prefix string) string {
	if prefix == "" {
		return strings.Join(Strings, " ")
	}
	return strings.Join(append([]string{prefix}, Strings...), " ")
}
