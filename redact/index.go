package redact

import (
	"cmp"
	"slices"
)

// index finds every known value and every token-format match in a text in
// one pass: each needle (a value, or a literal every match of a format
// starts with) is filed under its first two bytes, and the scan looks
// each two bytes of the text up in a bitset, about 2 GB/s of source text;
// only where the bitset says a needle may start are the needles compared,
// and a format's regular expression run from there. A search per needle
// (bytes.Index) would read the text once for each of the 15 or more
// needles: 400 MB/s.
type index struct {
	bits  [1 << 16 / 64]uint64
	cands map[uint16][]needle
}

// needle is one known value (pat nil) or a literal that starts every match
// of pat.
type needle struct {
	lit  string
	name string
	pat  *pattern
}

// span is one secret found in a text: b[start:end], called name.
type span struct {
	start, end int
	name       string
	pat        bool
}

// formatIndex holds the token formats' needles only.
var formatIndex = newIndex(nil)

func newIndex(values []Secret) *index {
	ix := &index{cands: map[uint16][]needle{}}
	add := func(n needle) {
		k := uint16(n.lit[0])<<8 | uint16(n.lit[1])
		ix.bits[k>>6] |= 1 << (k & 63)
		ix.cands[k] = append(ix.cands[k], n)
	}
	for _, v := range values { // longest first: see New
		add(needle{lit: v.Value, name: v.Name})
	}
	for i := range patterns {
		for _, l := range patterns[i].lits {
			add(needle{lit: l, name: patterns[i].name, pat: &patterns[i]})
		}
	}
	return ix
}

// spans returns the secrets of b, in order and with overlapping ones
// merged: each merged span keeps the name of the match
// that starts first (at the same start: a known value before a format,
// then the longer).
func (ix *index) spans(b []byte) []span {
	var found []span
	for i := 0; i+1 < len(b); i++ {
		k := uint16(b[i])<<8 | uint16(b[i+1])
		if ix.bits[k>>6]&(1<<(k&63)) == 0 {
			continue
		}
		for _, n := range ix.cands[k] {
			if len(b)-i < len(n.lit) || string(b[i:i+len(n.lit)]) != n.lit {
				continue
			}
			if n.pat == nil {
				found = append(found, span{start: i, end: i + len(n.lit), name: n.name})
				continue
			}
			if n.pat.word && i > 0 && isWord(b[i-1]) {
				continue
			}
			if loc := n.pat.re.FindIndex(b[i:]); loc != nil {
				found = append(found, span{start: i, end: i + loc[1], name: n.name, pat: true})
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
		return cmp.Compare(b.end, a.end)
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
