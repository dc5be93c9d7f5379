package runner

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/tools"
)

// walkers are the built-ins whose path argument is a folder they walk
// (the workspace root when it is left out): a path rule gates them when
// the folder could hold a path the rule matches.
var walkers = map[string]bool{tools.NameListFiles: true, tools.NameGrep: true}

// matchApproval reports whether a call needs a human's approval, and the
// rule that says so. A rule without a path matches every call of its
// tool. A rule with a path glob (doublestar syntax, checked when the spec
// loaded) matches a call by the path the tool will act on: the "path"
// argument confined to the workspace ws and resolved, symlinks included,
// so that an absolute spelling, ./, .., doubled or trailing slashes, or a
// link (m -> migrations) name the same path as the plain one. Matching
// ignores case, so a case-insensitive file system cannot open
// Migrations/x.sql past a rule for migrations/**. A path that cannot be
// resolved inside the workspace (or a path argument that is not a string)
// is gated: the decision cannot be made on it.
//
// The tool resolves the path again at its I/O and asks approvalGate about
// what it found, so a link changed between this decision and the call is
// caught there.
func matchApproval(rules []spec.Approval, ws, tool string, args json.RawMessage) (string, bool) {
	var a map[string]json.RawMessage
	_ = json.Unmarshal(args, &a)
	for _, rule := range rules {
		if !toolMatches(rule.Tool, tool) {
			continue
		}
		desc := "tool: " + rule.Tool
		if rule.Path == "" {
			return desc, true
		}
		desc += ", path: " + rule.Path
		raw, has := a["path"]
		var p string
		switch {
		case !has && !walkers[tool]:
			continue // the call names no path, so the rule does not apply
		case has && json.Unmarshal(raw, &p) != nil:
			return desc + " (the path argument is not a string)", true
		case p == "":
			p = "."
		}
		rel, err := tools.Resolve(ws, p)
		if err != nil {
			return fmt.Sprintf("%s (%s cannot be resolved in the workspace: %v)", desc, p, err), true
		}
		if pathMatches(rule.Path, rel, walkers[tool]) {
			if rel != p {
				desc += fmt.Sprintf(" (%s resolves to %s)", p, rel)
			}
			return desc, true
		}
	}
	return "", false
}

// approvalGate is the Call.Gate of a call that was not gated at dispatch
// (or not granted): it refuses the call when the path the tool resolved at
// its I/O matches one of the tool's path rules after all.
func approvalGate(rules []spec.Approval, tool string) func(rel string) error {
	return func(rel string) error {
		for _, rule := range rules {
			if toolMatches(rule.Tool, tool) && rule.Path != "" && pathMatches(rule.Path, rel, walkers[tool]) {
				return fmt.Errorf("the path now resolves to %s, which the approval rule {tool: %s, path: %s} gates; the call did not run (call the tool again to ask for approval)", rel, tool, rule.Path)
			}
		}
		return nil
	}
}

// pathMatches reports whether the glob matches the resolved relative path
// rel, ignoring case. For a walk, it also matches when rel is a folder that
// could hold a match: the glob's fixed leading folders (SplitPattern's base)
// and rel are one inside the other. A glob that does not parse matches
// everything (Load refuses such specs; this is the safe side for others).
func pathMatches(glob, rel string, walk bool) bool {
	glob, rel = strings.ToLower(glob), strings.ToLower(rel)
	ok, err := doublestar.Match(glob, rel)
	if ok || err != nil {
		return true
	}
	if !walk {
		return false
	}
	base, _ := doublestar.SplitPattern(glob)
	return rel == "." || base == "." || inside(base, rel) || inside(rel, base)
}

// inside reports whether the slash-separated relative path p is dir or
// lies under it.
func inside(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// toolMatches reports whether an approval rule's tool, a name or a glob
// (doublestar syntax: github__* gates every tool of the github MCP
// server), names tool.
func toolMatches(pattern, tool string) bool {
	if pattern == tool {
		return true
	}
	ok, err := doublestar.Match(pattern, tool)
	return ok && err == nil
}
