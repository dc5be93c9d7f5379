package recorder

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/session"
)

// lsess is a session of a lineage test: its header's links and what its
// log records of subagents (task intents, and subagent_started naming a
// child) after the header.
type lsess struct {
	id, parent      string
	seq, forkedFrom int64
	replay          bool
	body            []session.Event
}

// taskCall is a task call's intent (seq 2 of a log that holds only it)
// and its subagent_started naming child.
func taskCall(call, child string) []session.Event {
	return []session.Event{
		{Kind: session.KindToolIntent, CallID: call, Tool: "task"},
		{Kind: session.KindSubagentStarted, CallID: call, Tool: "task", ChildSessionID: child},
	}
}

func writeLineage(t *testing.T, ss []lsess) Store {
	t.Helper()
	st := Store{Root: t.TempDir()}
	for _, s := range ss {
		hdr := session.Event{Kind: session.KindSessionStarted, SessionID: s.id, ParentSessionID: s.parent, ParentSeq: s.seq, ForkedFrom: s.forkedFrom}
		if s.replay {
			hdr.Attrs, _ = json.Marshal(map[string]string{"replay_of": s.parent})
		}
		if _, err := st.WriteSession(append([]session.Event{hdr}, s.body...), Options{NoSync: true}); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func skipIDs(ss []Skip) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
}

func TestLineage(t *testing.T) {
	const p, s, f, r, g = "p000000000000001", "s000000000000001", "f000000000000001", "r000000000000001", "g000000000000001"
	chain := []lsess{{id: "c000"}}
	for i := 1; i <= MaxLineageDepth+5; i++ {
		chain = append(chain, lsess{id: fmt.Sprintf("c%03d", i), parent: fmt.Sprintf("c%03d", i-1), forkedFrom: 1})
	}
	var chainWant []string
	for i := 1; i <= MaxLineageDepth; i++ {
		chainWant = append(chainWant, fmt.Sprintf("c%03d", i))
	}
	for _, tc := range []struct {
		name     string
		sessions []lsess
		root     string
		links    map[string]Relation
		children []string
		subs     []string
		desc     []string
		skips    []string // ids Descendants(root) left out
	}{
		{name: "subagent", root: p,
			sessions: []lsess{{id: p, body: taskCall("c1", s)}, {id: s, parent: p, seq: 2}},
			links:    map[string]Relation{s: RelSubagent, p: ""},
			children: []string{s}, subs: []string{s}, desc: []string{s}},
		{name: "fork", root: p,
			sessions: []lsess{{id: p}, {id: f, parent: p, forkedFrom: 1}},
			links:    map[string]Relation{f: RelFork},
			children: []string{f}, desc: []string{f}},
		{name: "replay", root: p,
			sessions: []lsess{{id: p}, {id: r, parent: p, replay: true}},
			links:    map[string]Relation{r: RelReplay},
			children: []string{r}, desc: []string{r}},
		{name: "ordered by the seq they hang off, then id", root: p,
			sessions: []lsess{{id: p, body: taskCall("c1", s)}, {id: s, parent: p, seq: 2}, {id: f, parent: p, forkedFrom: 1}, {id: r, parent: p, replay: true}},
			children: []string{r, f, s}, subs: []string{s}, desc: []string{r, f, s}},
		{name: "fork of a subagent is a fork", root: p,
			// A fork copies the subagent's header, parent_seq included.
			sessions: []lsess{{id: p, body: taskCall("c1", s)}, {id: s, parent: p, seq: 2}, {id: f, parent: s, seq: 2, forkedFrom: 2}},
			links:    map[string]Relation{f: RelFork, s: RelSubagent},
			children: []string{s}, subs: []string{s}, desc: []string{s, f}},
		{name: "forged subagent header not confirmed by the parent", root: p,
			sessions: []lsess{{id: p, body: taskCall("c1", s)}, {id: s, parent: p, seq: 2}, {id: g, parent: p, seq: 2}},
			links:    map[string]Relation{g: RelSubagent},
			children: []string{s}, subs: []string{s}, desc: []string{s}, skips: []string{g}},
		{name: "subagent header naming the wrong seq", root: p,
			sessions: []lsess{{id: p, body: append(taskCall("c1", s), session.Event{Kind: session.KindToolIntent, CallID: "c9", Tool: "task"})}, {id: s, parent: p, seq: 4}},
			skips:    []string{s}},
		{name: "parent's log starts a subagent with no log", root: p,
			sessions: []lsess{{id: p, body: taskCall("c1", s)}},
			skips:    []string{s}},
		{name: "cycle", root: "a000",
			sessions: []lsess{{id: "a000", parent: "b000", forkedFrom: 1}, {id: "b000", parent: "a000", forkedFrom: 1}},
			links:    map[string]Relation{"a000": RelFork, "b000": RelFork},
			children: []string{"b000"}, desc: []string{"b000"}, skips: []string{"a000"}},
		{name: "self parent is no parent", root: p,
			sessions: []lsess{{id: p, parent: p, forkedFrom: 1}},
			links:    map[string]Relation{p: ""}},
		{name: "depth over 64", root: "c000", sessions: chain,
			children: []string{"c001"}, desc: chainWant, skips: []string{fmt.Sprintf("c%03d", MaxLineageDepth+1)}},
		{name: "missing parent", root: "m000",
			sessions: []lsess{{id: f, parent: "m000", forkedFrom: 3}, {id: s, parent: "m000", seq: 2}},
			links:    map[string]Relation{f: RelFork, s: RelSubagent},
			children: []string{f}, desc: []string{f}, skips: []string{s}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := writeLineage(t, tc.sessions)
			l, err := st.Lineage()
			if err != nil {
				t.Fatal(err)
			}
			for id, rel := range tc.links {
				if got := l.LinkOf(id).Relation; got != rel {
					t.Errorf("LinkOf(%s).Relation = %q, want %q", id, got, rel)
				}
			}
			if got := l.Children(tc.root); !reflect.DeepEqual(got, tc.children) {
				t.Errorf("Children(%s) = %v, want %v", tc.root, got, tc.children)
			}
			if got := l.Subagents(tc.root); !reflect.DeepEqual(got, tc.subs) {
				t.Errorf("Subagents(%s) = %v, want %v", tc.root, got, tc.subs)
			}
			desc, skips := l.Descendants(tc.root)
			if !reflect.DeepEqual(desc, tc.desc) {
				t.Errorf("Descendants(%s) = %v, want %v", tc.root, desc, tc.desc)
			}
			if got := skipIDs(skips); !reflect.DeepEqual(got, tc.skips) {
				t.Errorf("Descendants(%s) skipped %v, want %v (%v)", tc.root, got, tc.skips, skips)
			}
			for _, sk := range skips {
				if sk.Reason == "" || !strings.Contains(sk.String(), sk.ID) {
					t.Errorf("skip %+v has no reason", sk)
				}
			}
		})
	}
}

// TestAncestors: the walk up by headers follows the relations asked for,
// stops at a fork when only subagents are, and fails on a loop, a missing
// parent and a chain deeper than MaxLineageDepth.
func TestAncestors(t *testing.T) {
	const p, s, s2, f = "p000000000000001", "s000000000000001", "s000000000000002", "f000000000000001"
	st := writeLineage(t, []lsess{
		{id: p, body: taskCall("c1", s)}, {id: s, parent: p, seq: 2, body: taskCall("c1", s2)}, {id: s2, parent: s, seq: 2},
		{id: f, parent: s, seq: 2, forkedFrom: 2},
		{id: "a000", parent: "b000", forkedFrom: 1}, {id: "b000", parent: "a000", forkedFrom: 1},
		{id: "o000", parent: "m000", seq: 2},
	})
	for _, tc := range []struct {
		id      string
		rels    []Relation
		parents []string
		err     string
	}{
		{id: p},
		{id: s2, rels: []Relation{RelSubagent}, parents: []string{s, p}},
		{id: f, rels: []Relation{RelSubagent}},
		{id: f, parents: []string{s, p}},
		{id: "a000", parents: []string{"b000"}, err: "loop"},
		{id: "o000", parents: []string{"m000"}, err: "m000"},
	} {
		links, err := st.Ancestors(tc.id, tc.rels...)
		var got []string
		for _, l := range links {
			got = append(got, l.Parent)
		}
		if !reflect.DeepEqual(got, tc.parents) || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("Ancestors(%s, %v) = %v, %v; want %v, error with %q", tc.id, tc.rels, got, err, tc.parents, tc.err)
		}
	}
	if _, err := st.Header("m000"); err == nil {
		t.Error("Header of a session with no log: no error")
	}
}
