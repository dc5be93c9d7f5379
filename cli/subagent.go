package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/agentctl/agentctl/recorder"
	"github.com/agentctl/agentctl/recorder/otlp"
	"github.com/agentctl/agentctl/runner"
	"github.com/agentctl/agentctl/session"
	"github.com/agentctl/agentctl/termsafe"
)

// Child gives a subagent the live OTLP exporter of its parent (a child
// exporter sharing its queue); the live view on stderr shows the parent
// only, whose log says when a child starts and ends.
func (o observers) Child() runner.Observer {
	for _, x := range o {
		if l, ok := x.(*otlp.Live); ok {
			return l.Child()
		}
	}
	return nil
}

var _ runner.ChildObserver = observers(nil)

// subagentsOf lists the subagents below session id, depth first, as the
// subagent_started events of each log name them (each once).
func subagentsOf(f *Factory, id string) []string {
	st := f.Store()
	seen := map[string]bool{id: true}
	var out []string
	var walk func(string, int)
	walk = func(id string, depth int) {
		if depth > 8 {
			return
		}
		fold, _, _ := st.Fold(id)
		for _, c := range fold.Children {
			if seen[c] {
				continue
			}
			seen[c] = true
			out = append(out, c)
			walk(c, depth+1)
		}
	}
	walk(id, 0)
	return out
}

// treeNode is one session of `show --tree`: its summary, how it hangs
// off its parent, and its children and forks. Its JSON form is part of
// the --json output and only grows.
type treeNode struct {
	recorder.Summary
	// Relation is "subagent" (started by the parent's task call whose
	// intent is Seq), "fork" (forked from the parent at Seq: replay fork,
	// proxy --replay --until) or "replay" (a replay of the parent: proxy
	// --replay, replay run --keep of an external agent's session); ""
	// for the session asked about.
	Relation string      `json:"relation,omitempty"`
	Seq      int64       `json:"seq,omitempty"`
	Children []*treeNode `json:"children,omitempty"`
}

// sessionTree builds the tree below id from every session's header: a
// child is a session whose header names its parent (parent_session_id),
// as a subagent (parent_seq) or a fork (forked_from). Children come in
// the order of that seq, then id.
func sessionTree(st recorder.Store, id string) (*treeNode, error) {
	ids, err := st.IDs()
	if err != nil {
		return nil, err
	}
	kids := map[string][]*treeNode{}
	var root *treeNode
	for _, sid := range ids {
		fold, tail, ferr := st.Fold(sid)
		n := &treeNode{Summary: recorder.SummaryOf(sid, fold, tail, ferr)}
		n.Summary.ParentSessionID = fold.ParentSessionID
		switch {
		case fold.ParentSeq > 0:
			n.Relation, n.Seq = "subagent", fold.ParentSeq
		case fold.ForkedFrom > 0:
			n.Relation, n.Seq = "fork", fold.ForkedFrom
		case fold.ReplayOf != "":
			n.Relation = "replay" // a proxy replay, an external agent's replay run --keep
		case fold.ParentSessionID != "":
			n.Relation = "subagent" // an imported one: the source names no call
		}
		if sid == id {
			root = n
		}
		if fold.ParentSessionID != "" && fold.ParentSessionID != sid {
			kids[fold.ParentSessionID] = append(kids[fold.ParentSessionID], n)
		}
	}
	if root == nil {
		return nil, fmt.Errorf("session %s has no log", id)
	}
	seen := map[string]bool{}
	var attach func(n *treeNode)
	attach = func(n *treeNode) {
		seen[n.SessionID] = true
		ks := kids[n.SessionID]
		sort.SliceStable(ks, func(i, j int) bool {
			if ks[i].Seq != ks[j].Seq {
				return ks[i].Seq < ks[j].Seq
			}
			return ks[i].SessionID < ks[j].SessionID
		})
		for _, k := range ks {
			if seen[k.SessionID] {
				continue // a header naming its own descendant: shown once
			}
			n.Children = append(n.Children, k)
			attach(k)
		}
	}
	attach(root)
	root.Relation, root.Seq = "", 0
	return root, nil
}

// writeTree prints the tree, one session a line:
//
//	3f2a…  parent  done  2 turns, 3 tool calls
//	└─ 9c1b…  subagent of seq 7 (task)  researcher  done  …
func writeTree(w io.Writer, n *treeNode) {
	var line func(n *treeNode, prefix, branch string)
	line = func(n *treeNode, prefix, branch string) {
		rel := ""
		switch n.Relation {
		case "subagent":
			rel = "  subagent"
			if n.Seq > 0 {
				rel += fmt.Sprintf(" (task call at seq %d)", n.Seq)
			}
		case "fork":
			rel = fmt.Sprintf("  fork (from seq %d)", n.Seq)
		case "replay":
			rel = fmt.Sprintf("  replay (of %s)", n.Summary.ParentSessionID)
		}
		fmt.Fprintf(w, "%s%s%s%s  %s  %s  %d events, %d tool calls, %d tokens, $%.4f\n", prefix, branch,
			n.SessionID, rel, termsafe.String(orDash(n.Name)), n.Status, n.Events, n.ToolCalls, n.InputTokens+n.OutputTokens, n.CostUSD)
		next := prefix
		switch branch {
		case "├─ ":
			next += "│  "
		case "└─ ":
			next += "   "
		}
		for i, c := range n.Children {
			b := "├─ "
			if i == len(n.Children)-1 {
				b = "└─ "
			}
			line(c, next, b)
		}
	}
	line(n, "", "")
}

// parentFilter keeps the sessions whose parent (a subagent's or a fork's)
// is parent.
func parentFilter(list []recorder.Summary, parent string) []recorder.Summary {
	var out []recorder.Summary
	for _, s := range list {
		if s.ParentSessionID == parent {
			out = append(out, s)
		}
	}
	return out
}

// subagentLine describes a subagent event in the timeline.
func subagentLine(e session.Event) string {
	s := "child " + e.ChildSessionID
	if e.CallID != "" {
		s += " for call " + e.CallID
	}
	if e.Kind == session.KindSubagentFinished {
		s += fmt.Sprintf(" %s, %d tokens, $%.4f", orDash(e.Status), e.InputTokens+e.OutputTokens, e.CostUSD)
		if e.Output != "" {
			s += " " + quote(strings.TrimSpace(e.Output), 60)
		}
	}
	return s
}

func showTreeRun(f *Factory, opts *showOptions) error {
	st := f.Store()
	id, err := st.Resolve(opts.Session)
	if err != nil {
		return err
	}
	tree, err := sessionTree(st, id)
	if err != nil {
		return err
	}
	if opts.JSON {
		return json.NewEncoder(f.Out).Encode(tree)
	}
	writeTree(termsafe.Writer(f.Out), tree)
	return nil
}
