package ui

import (
	"cmp"
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/session"
)

// runIndexSQL is what the runs page reads from the sessions view: every
// figure it shows or filters on, as the view computes it (the index keeps
// them; it computes none), newest first (a session with no start last),
// ties by id. That order is the list's and the paging cursor's.
const runIndexSQL = `SELECT session_id, coalesce(name, ''), coalesce(status, ''), coalesce(reason, ''),
  origin, coalesce(model, ''), turns::BIGINT, tool_calls::BIGINT, tokens::BIGINT,
  cost_usd::DOUBLE, coalesce(duration_ms, 0)::BIGINT, epoch_us(started), coalesce(epoch_us(started), 0) AS sort_us,
  map_keys(tags), map_values(tags),
  array_to_string(list_sort(list_transform(map_entries(tags), lambda e: e.key || '=' || e.value)), ' '),
  coalesce(user_id, ''), list_contains(not_recorded, '` + session.NotRecordedUsage + `')
FROM sessions ORDER BY sort_us DESC, session_id`

// runEntry is one session as the index is given it: a row of runIndexSQL.
type runEntry struct {
	ID, Name, Status, Reason, Origin, Model, User string
	Turns, ToolCalls, Tokens, DurationMS          int64
	Cost                                          float64
	// SortUS is the start in microseconds since 1970 (0 when the session
	// has none, which Started then says).
	SortUS  int64
	Started bool
	Tags    map[string]string
	TagText string
	// NoUsage: the import's source records no tokens, so no cost (the
	// view's not_recorded); the page shows them as unknown, not 0.
	NoUsage bool
}

// runIndex is the runs page's list in the server's memory, made once per
// opening of the history (Server.perDB) from the sessions view, so that a
// request filters, counts and pages it without asking DuckDB: the view
// folds every session, and even a table of its rows is a scan of all of
// them per request (18 ms at 100,000 sessions against 3.7 at 10,000).
//
// Rows are numbered in the list's order (row 0 is the newest). Each
// column is a slice by row; the columns a filter compares for equality
// keep each distinct value once with the rows that have it, ascending.
// A filter starts from its narrowest list of rows (or the date range,
// which is a run of rows, the list being in time order) and checks each
// row of it against the other conditions; the page is the first rows
// from the cursor's place, found by binary search. So a request costs
// the length of its narrowest condition, not the length of the history,
// and nothing per request when one condition alone narrows it.
//
// An index is never changed once made; requests read it concurrently.
type runIndex struct {
	// The ids are one string (idText, row i's ending at idEnd[i]) and
	// the rows are found by id through a hash of it (byHash; the rare ids
	// whose hash another has are in byID): nothing per row that the
	// garbage collector must trace, so a request's collections cost the
	// same however long the history.
	idText  string
	idEnd   []int32
	byHash  map[uint64]int32
	byID    map[string]int32
	hashKey maphash.Seed
	sortUS  []int64
	// noStart marks the rows with no start (their sortUS is 0), noUsage
	// those whose source records no usage (rare: imports).
	noStart    map[int32]bool
	noUsage    map[int32]bool
	turns      []int64
	toolCalls  []int64
	tokens     []int64
	durationMS []int64
	cost       []float64
	// byCost is the rows in ascending cost, and costs those costs: the
	// number of sessions above a cost is one binary search.
	byCost []int32
	costs  []float64

	name, status, reason, origin, model, user dict

	// tagSet is each row's tags as an index into tagSets (sessions
	// mostly share theirs); tagRows and keyRows are the rows with a tag
	// (k=v) and with a key.
	tagSet  []uint32
	tagSets []tags
	tagRows map[[2]string][]int32
	keyRows map[string][]int32
}

type tags struct {
	m    map[string]string
	text string // as the page shows them: k=v sorted, space separated
}

// dict is a column of repeated values (a status, a model): each row's
// value as a code, each value once, and the rows of each value.
type dict struct {
	codes  []uint32
	values []string
	of     map[string]uint32
	rows   [][]int32
}

func (d *dict) add(v string, row int32) {
	c, ok := d.of[v]
	if !ok {
		if d.of == nil {
			d.of = map[string]uint32{}
		}
		c = uint32(len(d.values))
		d.of[v], d.values, d.rows = c, append(d.values, v), append(d.rows, nil)
	}
	d.codes = append(d.codes, c)
	d.rows[c] = append(d.rows[c], row)
}

func (d *dict) at(row int32) string { return d.values[d.codes[row]] }

// loadRunIndex reads the sessions view into an index; call it inside
// WithDB.
func loadRunIndex(ctx context.Context, db *query.DB) (*runIndex, error) {
	res, err := db.Query(ctx, runIndexSQL)
	if err != nil {
		return nil, fmt.Errorf("ui: read the sessions for the runs page: %w", err)
	}
	entries := make([]runEntry, len(res.Rows))
	for i, r := range res.Rows {
		e := runEntry{
			ID: query.Text(r[0]), Name: query.Text(r[1]), Status: query.Text(r[2]), Reason: query.Text(r[3]),
			Origin: query.Text(r[4]), Model: query.Text(r[5]),
			Turns: query.Int(r[6]), ToolCalls: query.Int(r[7]), Tokens: query.Int(r[8]), DurationMS: query.Int(r[10]),
			SortUS: query.Int(r[12]), TagText: query.Text(r[15]), User: query.Text(r[16]),
		}
		e.Cost = math.NaN() // NULL: above no cost, as in SQL
		if f, ok := query.Number(r[9]); ok {
			e.Cost = f
		}
		e.Started = r[11] != nil
		e.NoUsage, _ = r[17].(bool)
		ks, _ := r[13].([]any)
		vs, _ := r[14].([]any)
		if len(ks) > 0 && len(ks) == len(vs) {
			e.Tags = make(map[string]string, len(ks))
			for j := range ks {
				e.Tags[query.Text(ks[j])] = query.Text(vs[j])
			}
		}
		entries[i] = e
		res.Rows[i] = nil // let the rows go as they are read
	}
	return newRunIndex(entries), nil
}

// newRunIndex indexes entries, given in the list's order.
func newRunIndex(entries []runEntry) *runIndex {
	n := len(entries)
	x := &runIndex{
		idEnd: make([]int32, n), byHash: make(map[uint64]int32, n), byID: map[string]int32{}, hashKey: maphash.MakeSeed(),
		sortUS: make([]int64, n), noStart: map[int32]bool{}, noUsage: map[int32]bool{},
		turns: make([]int64, n), toolCalls: make([]int64, n), tokens: make([]int64, n), durationMS: make([]int64, n),
		cost: make([]float64, n), tagSet: make([]uint32, n),
		tagRows: map[[2]string][]int32{}, keyRows: map[string][]int32{},
	}
	sets := map[string]uint32{}
	var ids strings.Builder
	size := 0
	for _, e := range entries {
		size += len(e.ID)
	}
	ids.Grow(size)
	x.tagSets = []tags{{}} // 0: none
	for i, e := range entries {
		row := int32(i)
		ids.WriteString(e.ID)
		x.idEnd[i] = int32(ids.Len())
		x.sortUS[i] = e.SortUS
		if !e.Started {
			x.noStart[row] = true
		}
		if e.NoUsage {
			x.noUsage[row] = true
		}
		x.turns[i], x.toolCalls[i], x.tokens[i], x.durationMS[i], x.cost[i] = e.Turns, e.ToolCalls, e.Tokens, e.DurationMS, e.Cost
		h := maphash.String(x.hashKey, e.ID)
		if _, taken := x.byHash[h]; taken {
			x.byID[e.ID] = row
		} else {
			x.byHash[h] = row
		}
		x.name.add(e.Name, row)
		x.status.add(e.Status, row)
		x.reason.add(e.Reason, row)
		x.origin.add(e.Origin, row)
		x.model.add(e.Model, row)
		x.user.add(e.User, row)
		if len(e.Tags) > 0 {
			key := fmt.Sprintf("%q", sortedPairs(e.Tags))
			s, ok := sets[key]
			if !ok {
				s = uint32(len(x.tagSets))
				sets[key] = s
				x.tagSets = append(x.tagSets, tags{m: e.Tags, text: e.TagText})
			}
			x.tagSet[i] = s
		}
		for k, v := range e.Tags {
			x.tagRows[[2]string{k, v}] = append(x.tagRows[[2]string{k, v}], row)
			x.keyRows[k] = append(x.keyRows[k], row)
		}
	}
	x.idText = ids.String()
	x.byCost = make([]int32, n)
	for i := range x.byCost {
		x.byCost[i] = int32(i)
	}
	slices.SortFunc(x.byCost, func(a, b int32) int {
		if c := cmp.Compare(x.cost[a], x.cost[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	x.costs = make([]float64, n)
	for i, r := range x.byCost {
		x.costs[i] = x.cost[r]
	}
	return x
}

func sortedPairs(m map[string]string) [][2]string {
	out := make([][2]string, 0, len(m))
	for k, v := range m {
		out = append(out, [2]string{k, v})
	}
	slices.SortFunc(out, func(a, b [2]string) int { return cmp.Compare(a[0], b[0]) })
	return out
}

func (x *runIndex) len() int { return len(x.idEnd) }

// id is row i's session id.
func (x *runIndex) id(i int32) string {
	start := int32(0)
	if i > 0 {
		start = x.idEnd[i-1]
	}
	return x.idText[start:x.idEnd[i]]
}

// rowOf is the row of session id.
func (x *runIndex) rowOf(id string) (int32, bool) {
	if r, ok := x.byHash[maphash.String(x.hashKey, id)]; ok && x.id(r) == id {
		return r, true
	}
	r, ok := x.byID[id]
	return r, ok
}

// row is row i as the page shows it (without its link).
func (x *runIndex) row(i int32) runRow {
	return runRow{
		SessionID: x.id(i), Name: x.name.at(i), Status: x.status.at(i), Reason: x.reason.at(i), Origin: x.origin.at(i),
		Model: x.model.at(i), User: x.user.at(i), Tags: x.tagSets[x.tagSet[i]].text,
		Turns: x.turns[i], ToolCalls: x.toolCalls[i], Tokens: x.tokens[i], Cost: x.shownCost(i), NoUsage: x.noUsage[i],
		Duration: time.Duration(x.durationMS[i]) * time.Millisecond, Started: x.startedAt(i),
		key: cursor{x.sortUS[i], x.id(i)},
	}
}

// shownCost is row i's cost as the page shows it: a NULL one as 0.
func (x *runIndex) shownCost(i int32) float64 {
	if math.IsNaN(x.cost[i]) {
		return 0
	}
	return x.cost[i]
}

// startedAt is row i's start; zero when it has none.
func (x *runIndex) startedAt(i int32) time.Time {
	if x.noStart[i] {
		return time.Time{}
	}
	return time.UnixMicro(x.sortUS[i])
}

// rowsAfter is the place of the first row after k in the list's order:
// the rows from there on are older than k (or as old, with a greater id).
func (x *runIndex) rowsAfter(k cursor) int {
	return sort.Search(x.len(), func(i int) bool {
		return x.sortUS[i] < k.us || (x.sortUS[i] == k.us && x.id(int32(i)) > k.id)
	})
}

// rowsBefore is the place of the first row not before k: the rows up to
// it are newer than k.
func (x *runIndex) rowsBefore(k cursor) int {
	return sort.Search(x.len(), func(i int) bool {
		return x.sortUS[i] < k.us || (x.sortUS[i] == k.us && x.id(int32(i)) >= k.id)
	})
}

// since is the place of the first row that started before us (the rows
// up to it started at or after it; a session with no start counts as 0).
func (x *runIndex) since(us int64) int {
	return sort.Search(x.len(), func(i int) bool { return x.sortUS[i] < us })
}

// runCond is one condition of a filter: the rows it selects, ascending,
// when it has them as a list, and a check of one row.
type runCond struct {
	rows []int32
	list bool
	has  func(int32) bool
}

// runsSel is what a filter selected: total rows, and the page's rows.
type runsSel struct {
	Total int
	Rows  []int32
	// more says rows were left past the page.
	more bool
	// examined counts the rows looked at to answer (the tests check it
	// does not grow with the history).
	examined int
}

// runsPageReq is which page of the selection to cut.
type runsPageReq struct {
	after, before *cursor
	limit         int // 0: every row
}

// selectRows answers a filter. text, called only when the other
// conditions leave rows to search, gives the rows whose messages contain
// the filter's text, ascending.
func (x *runIndex) selectRows(f runsFilter, pg runsPageReq, text func() ([]int32, error)) (runsSel, error) {
	var sel runsSel
	lo, hi := 0, x.len()
	for _, b := range []struct {
		v, name string
		end     bool
	}{{f.Since, "since", false}, {f.Until, "until", true}} {
		if b.v == "" {
			continue
		}
		t, err := parseWhen(b.v, b.end)
		if err != nil {
			return sel, badRequest("%s %q: %v", b.name, b.v, err)
		}
		if b.end {
			lo = max(lo, x.since(t.UnixMicro()))
		} else {
			hi = min(hi, x.since(t.UnixMicro()))
		}
	}
	var conds []runCond
	none := false
	eq := func(d *dict, v string) {
		if v == "" {
			return
		}
		c, ok := d.of[v]
		if !ok {
			none = true
			return
		}
		conds = append(conds, runCond{rows: d.rows[c], list: true, has: func(i int32) bool { return d.codes[i] == c }})
	}
	eq(&x.status, f.Status)
	eq(&x.origin, f.Origin)
	eq(&x.model, f.Model)
	eq(&x.name, f.Agent)
	eq(&x.user, f.User)
	for _, t := range f.Tags {
		k, v, pair := cutTag(t)
		if pair {
			conds = append(conds, runCond{rows: x.tagRows[[2]string{k, v}], list: true, has: func(i int32) bool {
				got, ok := x.tagSets[x.tagSet[i]].m[k]
				return ok && got == v
			}})
		} else {
			conds = append(conds, runCond{rows: x.keyRows[k], list: true, has: func(i int32) bool {
				_, ok := x.tagSets[x.tagSet[i]].m[k]
				return ok
			}})
		}
	}
	if len(f.IDs) > 0 {
		var rows []int32
		for _, id := range f.IDs {
			if r, ok := x.rowOf(id); ok {
				rows = append(rows, r)
			}
		}
		slices.Sort(rows)
		rows = slices.Compact(rows)
		conds = append(conds, listCond(rows, x.len()))
	}
	costAt := -1
	var costN int
	if f.CostAbove != "" {
		above, err := parseCost(f.CostAbove)
		if err != nil {
			return sel, err
		}
		first := sort.Search(len(x.costs), func(i int) bool { return x.costs[i] > above })
		costN = len(x.costs) - first
		c := runCond{has: func(i int32) bool { return x.cost[i] > above }}
		narrowest := hi - lo
		for _, c := range conds {
			narrowest = min(narrowest, len(c.rows))
		}
		if costN < narrowest && costN <= x.len()/8 {
			// Few enough to list, and fewer than any other list: the
			// rows above the cost, in order.
			c.rows = slices.Clone(x.byCost[first:])
			c.list = true
			slices.Sort(c.rows)
		}
		none = none || costN == 0
		costAt = len(conds)
		conds = append(conds, c)
	}
	for i := range conds {
		if conds[i].list {
			conds[i].rows = within(conds[i].rows, lo, hi)
			if len(conds[i].rows) == 0 {
				none = true
			}
		}
	}
	if none || lo >= hi {
		return sel, nil
	}
	if f.Text != "" {
		rows, err := text()
		if err != nil {
			return sel, err
		}
		conds = append(conds, listCond(within(rows, lo, hi), x.len()))
	}

	// The narrowest list drives; the others check its rows.
	drive := -1
	for i, c := range conds {
		if c.list && (drive < 0 || len(c.rows) < len(conds[drive].rows)) {
			drive = i
		}
	}
	var checks []func(int32) bool
	for i, c := range conds {
		if i != drive {
			checks = append(checks, c.has)
		}
	}
	var rows []int32 // nil: the rows lo..hi
	n := hi - lo
	if drive >= 0 {
		rows = conds[drive].rows
		n = len(rows)
	}
	at := func(j int) int32 {
		if rows == nil {
			return int32(lo + j)
		}
		return rows[j]
	}
	ok := func(r int32) bool {
		sel.examined++
		for _, c := range checks {
			if !c(r) {
				return false
			}
		}
		return true
	}
	switch {
	case len(checks) == 0:
		sel.Total = n
	case len(checks) == 1 && drive < 0 && costAt >= 0 && lo == 0 && hi == x.len():
		sel.Total = costN
	default:
		for j := range n {
			if ok(at(j)) {
				sel.Total++
			}
		}
	}

	// The page: from the cursor's place, forward (older) or, for a page
	// before the cursor, backward; returned newest first.
	place := func(p int) int { // the first j with at(j) >= p
		if rows == nil {
			return min(max(p-lo, 0), n)
		}
		return sort.Search(n, func(j int) bool { return int(rows[j]) >= p })
	}
	limit := pg.limit
	if limit <= 0 {
		limit = n + 1
	}
	if pg.before != nil {
		for j := place(x.rowsBefore(*pg.before)) - 1; j >= 0; j-- {
			if r := at(j); ok(r) {
				if len(sel.Rows) == limit {
					sel.more = true
					break
				}
				sel.Rows = append(sel.Rows, r)
			}
		}
		slices.Reverse(sel.Rows)
		return sel, nil
	}
	start := 0
	if pg.after != nil {
		start = place(x.rowsAfter(*pg.after))
	}
	for j := start; j < n; j++ {
		if r := at(j); ok(r) {
			if len(sel.Rows) == limit {
				sel.more = true
				break
			}
			sel.Rows = append(sel.Rows, r)
		}
	}
	return sel, nil
}

// listCond is a condition given as its rows, ascending, of a list of n.
// Checked often (when a narrower condition drives), many rows are a
// bitmap: one bit test a row instead of a binary search.
func listCond(rows []int32, n int) runCond {
	if len(rows) < n/64 {
		return runCond{rows: rows, list: true, has: func(i int32) bool {
			_, found := slices.BinarySearch(rows, i)
			return found
		}}
	}
	set := make([]uint64, (n+63)/64)
	for _, r := range rows {
		set[r/64] |= 1 << (r % 64)
	}
	return runCond{rows: rows, list: true, has: func(i int32) bool { return set[i/64]&(1<<(i%64)) != 0 }}
}

// within is the part of rows (ascending) in lo..hi.
func within(rows []int32, lo, hi int) []int32 {
	a := sort.Search(len(rows), func(j int) bool { return int(rows[j]) >= lo })
	b := sort.Search(len(rows), func(j int) bool { return int(rows[j]) >= hi })
	return rows[a:max(a, b)]
}
