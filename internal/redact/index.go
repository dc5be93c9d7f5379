package redact

import (
	"cmp"
	"slices"
)

// index finds every known value and every token-format match in a text in
// one pass: each needle (a value, or a literal every match of a format
// starts with; all at least three bytes long) is filed under two
// overlapping two-byte anchors of it, at offsets k and k+1, the rarest
// three bytes by a rough measure of text (lowercase letters and spaces are
// common). The scan looks up the two bytes at every even offset of the
// text in a table of anchors: one of the needle's two anchors is at an
// even offset wherever the needle is. Only where an anchor is found are
// its needles compared, and a format's regular expression run from there.
// A search per needle (bytes.Index) would read the text once for each of
// the 15 or more needles.
type index struct {
	slot  [1 << 16]uint16 // anchor -> 1 + index in lists; 0: no needle
	lists [][]needle
}

// needle is one known value (pat nil) or a literal that starts every match
// of pat; at is the offset of its anchor in lit.
type needle struct {
	lit  string
	at   int
	name string
	pat  *pattern
	rank int // the pattern's place in patterns
}

// span is one secret found in a text: b[start:end], called name.
type span struct {
	start, end int
	name       string
	pat        bool
	rank       int
}

// formatIndex holds the token formats' needles only.
var formatIndex = newIndex(nil)

func newIndex(values []Secret) *index {
	ix := &index{}
	add := func(n needle) {
		at := anchor(n.lit)
		for _, n.at = range []int{at, at + 1} {
			k := uint16(n.lit[n.at])<<8 | uint16(n.lit[n.at+1])
			if ix.slot[k] == 0 {
				ix.lists = append(ix.lists, nil)
				ix.slot[k] = uint16(len(ix.lists))
			}
			ix.lists[ix.slot[k]-1] = append(ix.lists[ix.slot[k]-1], n)
		}
	}
	for _, v := range values { // longest first: see New
		add(needle{lit: v.Value, name: v.Name})
	}
	for i := range patterns {
		for _, l := range patterns[i].lits {
			add(needle{lit: l, name: patterns[i].name, pat: &patterns[i], rank: i})
		}
	}
	return ix
}

// anchor returns the offset of the three bytes of lit least likely in
// text; lit is at least three bytes long.
func anchor(lit string) int {
	common := func(c byte) int {
		switch {
		case c >= 'a' && c <= 'z', c == ' ', c == '\n', c == '\t':
			return 2
		case c >= '0' && c <= '9', c == '.', c == ',', c == '(', c == ')', c == '"':
			return 1
		}
		return 0
	}
	best, at := 7, 0
	for i := 0; i+2 < len(lit); i++ {
		if c := common(lit[i]) + common(lit[i+1]) + common(lit[i+2]); c < best {
			best, at = c, i
		}
	}
	return at
}

// spans returns the secrets of b, in order and with overlapping ones
// merged: each merged span keeps the name of the match
// that starts first (at the same start: a known value before a format,
// then the longer, then the format first in patterns).
func (ix *index) spans(b []byte) []span {
	var found []span
	for i := 0; i+1 < len(b); i += 2 {
		slot := ix.slot[uint16(b[i])<<8|uint16(b[i+1])]
		if slot == 0 {
			continue
		}
		for _, n := range ix.lists[slot-1] {
			start := i - n.at
			if start < 0 || len(b)-start < len(n.lit) || string(b[start:start+len(n.lit)]) != n.lit {
				continue
			}
			if n.pat == nil {
				found = append(found, span{start: start, end: start + len(n.lit), name: n.name})
				continue
			}
			if n.pat.word && start > 0 && isWord(b[start-1]) {
				continue
			}
			if s, e, ok := n.pat.match(b[start:]); ok {
				found = append(found, span{start: start + s, end: start + e, name: n.name, pat: true, rank: n.rank})
			}
		}
	}
	if len(found) < 2 {
		return found
	}
	slices.SortStableFunc(found, func(a, b span) int {
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		if a.pat != b.pat {
			if a.pat {
				return 1
			}
			return -1
		}
		if c := cmp.Compare(b.end, a.end); c != 0 {
			return c
		}
		return cmp.Compare(a.rank, b.rank)
	})
	out := found[:1]
	for _, s := range found[1:] {
		last := &out[len(out)-1]
		if s.start < last.end {
			last.end = max(last.end, s.end)
			continue
		}
		out = append(out, s)
	}
	return out
}

// isWord is regexp's \w.
func isWord(c byte) bool {
	return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}
