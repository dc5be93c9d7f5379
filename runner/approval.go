package runner

import (
	"encoding/json"
	"path"
	"regexp"
	"strings"

	"github.com/agentctl/agentctl/runner/spec"
)

// matchApproval reports whether a call needs a human's approval, and the
// rule that says so. A rule with a path glob matches only calls whose
// "path" argument matches it; "**" crosses folders, "*" does not.
func matchApproval(rules []spec.Approval, tool string, args json.RawMessage) (string, bool) {
	for _, rule := range rules {
		if rule.Tool != tool {
			continue
		}
		if rule.Path == "" {
			return "tool: " + tool, true
		}
		var a struct {
			Path string `json:"path"`
		}
		_ = json.Unmarshal(args, &a)
		p := strings.TrimPrefix(path.Clean("/"+a.Path), "/")
		if globRE(rule.Path).MatchString(p) {
			return "tool: " + tool + ", path: " + rule.Path, true
		}
	}
	return "", false
}

// globRE compiles a path glob: ** any run of characters, * any run within a
// folder, ? one character within a folder.
func globRE(glob string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; {
		case strings.HasPrefix(glob[i:], "**/"):
			b.WriteString("(.*/)?")
			i += 2
		case strings.HasPrefix(glob[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}
