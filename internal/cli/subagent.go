package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/recorder/otlp"
	"github.com/agentctl/agentctl/internal/runner"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/termsafe"
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

// treeNode is one session of `show --tree`: its summary, how it hangs
// off its parent, and its children and forks. Its JSON form is part of
// the --json output and only grows.
type treeNode struct {
	recorder.Summary
	// Relation is "subagent" (started by the parent's task call whose
	// intent is Seq), "fork" (forked from the parent at Seq: replay fork,
	// proxy --replay --until), "replay" (a replay of the parent: proxy
	// --replay, replay run --keep of an external agent's session) or
	// "side_thread" (a side conversation of the parent's client, such as
	// its title call: session.Route); "" for the session asked about.
	Relation string      `json:"relation,omitempty"`
	Seq      int64       `json:"seq,omitempty"`
	Children []*treeNode `json:"children,omitempty"`
}

// sessionTree builds the tree below id from recorder.Lineage: the
// children its rule counts (subagents their parent's log confirms, forks,
// replays), in its order, as bundle --with-children bundles them. What the
// lineage left out is returned for a warning.
func sessionTree(st recorder.Store, id string) (*treeNode, []recorder.Skip, error) {
	lin, err := st.Lineage()
	if err != nil {
		return nil, nil, err
	}
	if _, ok := lin.Header(id); !ok {
		return nil, nil, fmt.Errorf("session %s has no log", id)
	}
	node := func(sid string) *treeNode {
		fold, tail, ferr := st.Fold(sid)
		n := &treeNode{Summary: recorder.SummaryOf(sid, fold, tail, ferr)}
		ln := lin.LinkOf(sid)
		n.Summary.ParentSessionID = ln.Parent
		n.Relation, n.Seq = string(ln.Relation), ln.Seq()
		return n
	}
	root := node(id)
	root.Relation, root.Seq = "", 0
	nodes := map[string]*treeNode{id: root}
	kids, skips := lin.Descendants(id)
	for _, k := range kids {
		n := node(k)
		nodes[k] = n
		p := nodes[lin.LinkOf(k).Parent]
		p.Children = append(p.Children, n)
	}
	return root, skips, nil
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
		case "side_thread":
			rel = "  side thread (a call sharing nothing with the conversation: not a compaction)"
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
	tree, skips, err := sessionTree(st, id)
	if err != nil {
		return err
	}
	for _, sk := range skips {
		fmt.Fprintf(f.Err, "agentctl: warning: not shown: session %s\n", termsafe.String(sk.String()))
	}
	if opts.JSON {
		return json.NewEncoder(f.Out).Encode(tree)
	}
	writeTree(termsafe.Writer(f.Out), tree)
	return nil
}
