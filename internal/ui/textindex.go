package ui

import (
	"bytes"
	"context"
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strings"

	"github.com/agentctl/agentctl/internal/query"
)

// maxTextIndex bounds the memory of the text search's index: the distinct
// message texts' bytes, 16 bytes of bookkeeping a text, and 4 bytes for
// each session that has a text. A history
// whose messages need more is searched by SQL over the events instead
// (the same answer, a scan of every message per search, no memory spent).
const maxTextIndex = 64 << 20

// textIndex is what the runs page's text search reads: each distinct
// message text (query.MessageTextSQL: user and assistant messages,
// lowercased by DuckDB), once, with the rows of the runs index whose
// session has it. Made on the first search after the history was opened
// (most pages search nothing), never changed after.
//
// A search scans the distinct texts, not every message: runs of the same
// spec share their prompts and often their answers, so the texts are
// fewer than the messages (the bench's 100,000 sessions have one). A
// text that matches gives its rows as they are, ascending, with no work
// per session; several are merged. So a search costs the size of the
// distinct text plus, when more than one text matches, the rows they
// name.
type textIndex struct {
	// arena holds the texts one after another; text t ends at ends[t].
	arena []byte
	ends  []int
	// rows of text t are rows[rowsAt[t]:rowsAt[t+1]], ascending.
	rows   []int32
	rowsAt []int32
	// n is the runs index's length: a merge's bitmap.
	n int
}

// textSizeSQL is what the index would hold: the distinct texts' bytes
// and count, and the (session, text) pairs.
const textSizeSQL = `WITH p AS (SELECT DISTINCT session_id, text FROM (` + query.MessageTextSQL + `)),
t AS (SELECT DISTINCT text FROM p)
SELECT (SELECT coalesce(sum(strlen(text)), 0) FROM t)::BIGINT, (SELECT count(*) FROM t)::BIGINT, (SELECT count(*) FROM p)::BIGINT`

const textIndexSQL = `SELECT text, list(DISTINCT session_id) FROM (` + query.MessageTextSQL + `) GROUP BY text`

// loadTextIndex makes the index over rx's sessions, or returns nil when
// it would pass maxTextIndex. Call it inside WithDB.
func loadTextIndex(ctx context.Context, db *query.DB, rx *runIndex) (*textIndex, error) {
	res, err := db.Query(ctx, textSizeSQL)
	if err != nil {
		return nil, fmt.Errorf("ui: measure the messages for the text search: %w", err)
	}
	if len(res.Rows) != 1 {
		return nil, fmt.Errorf("ui: measure the messages for the text search: %d rows", len(res.Rows))
	}
	size, texts, pairs := query.Int(res.Rows[0][0]), query.Int(res.Rows[0][1]), query.Int(res.Rows[0][2])
	if size+16*texts+4*pairs > maxTextIndex {
		return nil, nil
	}
	res, err = db.Query(ctx, textIndexSQL)
	if err != nil {
		return nil, fmt.Errorf("ui: read the messages for the text search: %w", err)
	}
	x := &textIndex{arena: make([]byte, 0, size), rowsAt: make([]int32, 1, len(res.Rows)+1), rows: make([]int32, 0, pairs), n: rx.len()}
	var rows []int32
	for i, r := range res.Rows {
		ids, _ := r[1].([]any)
		rows = rows[:0]
		for _, id := range ids {
			if row, ok := rx.rowOf(query.Text(id)); ok {
				rows = append(rows, row)
			}
		}
		x.add(query.Text(r[0]), rows)
		res.Rows[i] = nil
	}
	return x, nil
}

// add adds a text and the rows that have it (any order; none: the text
// is left out, as it can match no row).
func (x *textIndex) add(text string, rows []int32) {
	if len(rows) == 0 {
		return
	}
	start := len(x.rows)
	x.rows = append(x.rows, rows...)
	slices.Sort(x.rows[start:])
	x.arena = append(x.arena, text...)
	x.ends = append(x.ends, len(x.arena))
	x.rowsAt = append(x.rowsAt, int32(len(x.rows)))
}

// search is the rows whose session has a message containing needle
// (lowercased as the texts are), ascending. The result may be the
// index's own slice: do not change it.
func (x *textIndex) search(needle []byte) []int32 {
	// Candidates are found by the needle's rarest byte (IndexByte runs
	// at memory speed; a search by the first byte of "the" stops every
	// few bytes), then compared whole.
	k := rarest(needle)
	var hits []int
	for off := k; off < len(x.arena); {
		j := bytes.IndexByte(x.arena[off:], needle[k])
		if j < 0 {
			break
		}
		at := off + j - k
		if at+len(needle) > len(x.arena) {
			break
		}
		if !bytes.Equal(x.arena[at:at+len(needle)], needle) {
			off += j + 1
			continue
		}
		t := sort.Search(len(x.ends), func(t int) bool { return x.ends[t] > at })
		if at+len(needle) <= x.ends[t] {
			hits = append(hits, t)
		}
		// Either way nothing more in text t: a later match in it would
		// run past its end too.
		off = x.ends[t] + k
	}
	switch len(hits) {
	case 0:
		return nil
	case 1:
		return x.rows[x.rowsAt[hits[0]]:x.rowsAt[hits[0]+1]]
	}
	set := make([]uint64, (x.n+63)/64)
	total := 0
	for _, t := range hits {
		for _, r := range x.rows[x.rowsAt[t]:x.rowsAt[t+1]] {
			if set[r/64]&(1<<(r%64)) == 0 {
				set[r/64] |= 1 << (r % 64)
				total++
			}
		}
	}
	out := make([]int32, 0, total)
	for w, b := range set {
		for ; b != 0; b &= b - 1 {
			out = append(out, int32(w*64+bits.TrailingZeros64(b)))
		}
	}
	return out
}

// commonBytes are the bytes of lowercased English text, rarest first.
const commonBytes = "zqxjkvbpygfwmucldrhsnioate "

// rarest is the place in needle of its least common byte: a byte that is
// not a letter or a space counts as rarer than any.
func rarest(needle []byte) int {
	best, rank := 0, len(commonBytes)+1
	for i, c := range needle {
		r := strings.IndexByte(commonBytes, c) + 1
		if r < rank {
			best, rank = i, r
		}
	}
	return best
}
