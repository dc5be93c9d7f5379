package spec

import (
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// MCPServer is one MCP server whose tools the agent gets, as
// <name>__<tool>: a program on stdio (command, run in the sandbox like a
// tool, with env added to its scrubbed environment) or a streamable HTTP
// endpoint (url, reached only where sandbox.network/allow let a tool
// reach, with headers whose values are read from the environment
// variables headers_env names, so no secret sits in the spec or the log).
type MCPServer struct {
	Name       string            `yaml:"name" json:"name"`
	Command    []string          `yaml:"command" json:"command,omitempty"`
	Env        map[string]string `yaml:"env" json:"env,omitempty"`
	URL        string            `yaml:"url" json:"url,omitempty"`
	HeadersEnv map[string]string `yaml:"headers_env" json:"headers_env,omitempty"`
}

// MCPTool declares how the harness treats one MCP tool (a key of
// mcp_tools, <server>__<tool>). Unset fields default from the server's
// annotations: side effects unless readOnlyHint, idempotent when
// idempotentHint.
type MCPTool struct {
	SideEffects *bool `yaml:"side_effects" json:"side_effects,omitempty"`
	Idempotent  *bool `yaml:"idempotent" json:"idempotent,omitempty"`
}

// mcpNameRE: letters, digits, - and single _ (a double one separates the
// server from the tool).
var mcpNameRE = regexp.MustCompile(`^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$`)

// mcpServer returns the server called name, or nil.
func (s *Spec) mcpServer(name string) *MCPServer {
	for i := range s.MCPServers {
		if s.MCPServers[i].Name == name {
			return &s.MCPServers[i]
		}
	}
	return nil
}

// IsMCPTool reports whether name is <server>__<tool> for one of the
// spec's MCP servers.
func (s *Spec) IsMCPTool(name string) bool {
	srv, _, ok := strings.Cut(name, "__")
	return ok && s.mcpServer(srv) != nil
}

func (s *Spec) validateMCP(bad func(string, ...any)) {
	seen := map[string]bool{}
	for i, m := range s.MCPServers {
		switch {
		case m.Name == "":
			bad("mcp server needs a name (its tools are offered as <name>__<tool>)", "mcp_servers", i)
		case !mcpNameRE.MatchString(m.Name) || len(m.Name) > 32:
			bad(fmt.Sprintf("mcp server name %q must be letters, digits, - and single _ (at most 32; __ separates the server from the tool)", m.Name), "mcp_servers", i, "name")
		case seen[m.Name]:
			bad(fmt.Sprintf("mcp server name %q is used twice", m.Name), "mcp_servers", i, "name")
		}
		seen[m.Name] = true
		switch {
		case len(m.Command) > 0 && m.URL != "":
			bad(fmt.Sprintf("mcp server %q takes command (stdio) or url (HTTP), not both", m.Name), "mcp_servers", i)
		case len(m.Command) == 0 && m.URL == "":
			bad(fmt.Sprintf("mcp server %q needs a command (stdio) or a url (streamable HTTP)", m.Name), "mcp_servers", i)
		case m.URL != "":
			if u, err := url.Parse(m.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad(fmt.Sprintf("mcp server %q: url %q is not an http(s) URL", m.Name, m.URL), "mcp_servers", i, "url")
			}
			if len(m.Env) > 0 {
				bad(fmt.Sprintf("mcp server %q: env is for stdio servers; an HTTP server takes headers_env", m.Name), "mcp_servers", i, "env")
			}
		default:
			if len(m.HeadersEnv) > 0 {
				bad(fmt.Sprintf("mcp server %q: headers_env is for HTTP servers; a stdio server takes env", m.Name), "mcp_servers", i, "headers_env")
			}
		}
		for h, v := range m.HeadersEnv {
			if h == "" || strings.ContainsAny(h, " :\r\n") || http.CanonicalHeaderKey(h) == "" {
				bad(fmt.Sprintf("mcp server %q: %q is not a header name", m.Name, h), "mcp_servers", i, "headers_env")
			}
			if v == "" {
				bad(fmt.Sprintf("mcp server %q: headers_env %s names no environment variable", m.Name, h), "mcp_servers", i, "headers_env")
			}
		}
	}
	for name, d := range s.MCPTools {
		if !s.IsMCPTool(name) {
			bad(fmt.Sprintf("mcp_tools key %q is not <server>__<tool> for a server of mcp_servers", name), "mcp_tools")
			continue
		}
		if d.Idempotent != nil && *d.Idempotent && d.SideEffects != nil && !*d.SideEffects {
			bad(fmt.Sprintf("mcp tool %q is idempotent but has no side_effects; idempotency only matters for side effects", name), "mcp_tools", name)
		}
	}
}

// approvalToolKnown says whether an approval rule's tool (a name or a
// glob) can match a tool of the spec: a built-in, a custom tool, or any
// tool of an MCP server (<server>__..., whose tools are only known once
// the server runs).
func (s *Spec) approvalToolKnown(pattern string) bool {
	if knownTools[pattern] || s.customTool(pattern) != nil || s.IsMCPTool(pattern) {
		return true
	}
	if !strings.ContainsAny(pattern, "*?[{\\") || !doublestar.ValidatePattern(pattern) {
		return false
	}
	for name := range knownTools {
		if ok, _ := doublestar.Match(pattern, name); ok {
			return true
		}
	}
	for _, c := range s.CustomTools {
		if ok, _ := doublestar.Match(pattern, c.Name); ok {
			return true
		}
	}
	for _, m := range s.MCPServers {
		// A glob that starts with the server's prefix may match its tools.
		if strings.HasPrefix(pattern, m.Name+"__") {
			return true
		}
	}
	return false
}

func (s *Spec) resolveMCP() {
	for i := range s.MCPServers {
		m := &s.MCPServers[i]
		if len(m.Command) > 0 && !filepath.IsAbs(m.Command[0]) && strings.Contains(m.Command[0], "/") {
			m.Command[0] = filepath.Join(s.Dir, m.Command[0])
		}
	}
}
