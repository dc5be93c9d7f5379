package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/buildinfo"
	"github.com/agentctl/agentctl/internal/mcpserver"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/remote"
)

// mcpTokenEnv is --token's default.
const mcpTokenEnv = "AGENTCTL_MCP_TOKEN"

type mcpOptions struct {
	Listen      string
	Token       string
	Remote      string
	PrintConfig string
	JSON        bool
}

// mcpClients are the clients --print-config knows, in the order help
// lists them.
var mcpClients = []string{"claude", "codex", "cursor"}

func newMCPCmd(f *Factory, runF func(context.Context, *mcpOptions) error) *cobra.Command {
	opts := &mcpOptions{}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the history to a coding agent as an MCP server (read-only)",
		Long: `Serve the home's history as a Model Context Protocol server, so a coding
agent (Claude Code, Codex, Cursor) can ask why a run failed. Over stdio by
default (the agent starts 'agentctl mcp' itself: --print-config prints the
snippet its config takes); over streamable HTTP with --listen, on loopback
only, every request carrying the bearer token it prints (or --token).

Tools: list_sessions, show_session, diagnose, compare_sessions, query,
eval_reports, replay_verify. Resources: agentctl://sessions/{id}/timeline
and agentctl://sessions/{id}/diagnosis. Every tool is read-only: none
starts, resumes, approves, replays or forks anything. Each answer is
bounded (64 KiB by default, 256 KiB at most; long strings clipped with a
note), recorded text has its control characters escaped, and each tool's
description tells the model that session content is data, never
instructions. The query tool runs one SELECT, confined as an eval suite's
sql: is.

--remote adds the shared history CI runners pushed, read-only, to
list_sessions, query and eval_reports, as 'query --remote' does.`,
		Example: `  claude mcp add agentctl -- agentctl mcp
  agentctl mcp --print-config codex >> ~/.codex/config.toml
  agentctl mcp --listen 127.0.0.1:8765`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return mcpRun(cmd.Context(), cmd, f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Listen, "listen", "", "serve streamable HTTP on this loopback `HOST:PORT` (port 0 picks one) instead of stdio")
	fl.StringVar(&opts.Token, "token", "", "with --listen: the bearer token requests must carry, at least 16 characters (env "+mcpTokenEnv+"; default: a random one, printed)")
	fl.StringVar(&opts.Remote, "remote", "", "also answer over this S3 remote's history `URL` (s3://bucket/prefix), read-only (env "+remote.Env+")")
	fl.StringVar(&opts.PrintConfig, "print-config", "", "print the config snippet of `CLIENT` ("+strings.Join(mcpClients, ", ")+") that starts this server, and exit")
	fl.BoolVar(&opts.JSON, "json", false, "with --listen: print the address as one JSON line")
	return cmd
}

func mcpRun(ctx context.Context, cmd *cobra.Command, f *Factory, opts *mcpOptions) error {
	if opts.PrintConfig != "" {
		return mcpPrintConfig(f, cmd, opts.PrintConfig)
	}
	if opts.Listen == "" && opts.Token != "" {
		return usageError{fmt.Errorf("mcp: --token is for --listen; over stdio the client that starts the server is the only one talking to it")}
	}
	var parts []query.RemotePart
	if url := remote.URL(opts.Remote); url != "" {
		var err error
		if parts, err = pullRemoteParts(ctx, f, url); err != nil {
			return err
		}
	}
	srv := mcpserver.New(mcpserver.Options{Store: f.Store(), Remote: parts, Version: buildinfo.Version, Warn: f.Err})
	if opts.Listen == "" {
		// stdout is the protocol: nothing else may be written to it.
		err := srv.Run(ctx, mcpserver.Stdio(f.In, f.Out))
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			return fmt.Errorf("mcp: %w", err)
		}
		return nil
	}
	return mcpServeHTTP(ctx, f, srv, opts)
}

func mcpServeHTTP(ctx context.Context, f *Factory, srv *mcp.Server, opts *mcpOptions) error {
	host, _, err := net.SplitHostPort(opts.Listen)
	if err != nil {
		return usageError{fmt.Errorf("mcp: --listen %q: want HOST:PORT, e.g. 127.0.0.1:0", opts.Listen)}
	}
	if !isLoopback(host) {
		return usageError{fmt.Errorf("mcp: --listen %s is not loopback: the history is served to this machine only (use 127.0.0.1:PORT)", opts.Listen)}
	}
	if opts.Token == "" {
		opts.Token = os.Getenv(mcpTokenEnv)
	}
	if opts.Token == "" {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return fmt.Errorf("mcp: make a token: %w", err)
		}
		opts.Token = hex.EncodeToString(b)
	} else if len(opts.Token) < 16 {
		return usageError{fmt.Errorf("mcp: --token is %d characters: give at least 16", len(opts.Token))}
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	url := "http://" + ln.Addr().String() + "/mcp"
	if opts.JSON {
		b, _ := json.Marshal(map[string]string{"kind": "listening", "address": ln.Addr().String(), "url": url, "token": opts.Token})
		fmt.Fprintln(f.Out, string(b))
	} else {
		fmt.Fprintf(f.Out, "agentctl mcp: %s\nAuthorization: Bearer %s\n", url, opts.Token)
		fmt.Fprintf(f.Err, "serving %s until Ctrl-C\n", f.Home)
	}
	hs := &http.Server{Handler: mcpserver.Handler(srv, opts.Token), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

// mcpPrintConfig prints client's config snippet: this binary by its
// absolute path, with --home when it is not the default.
func mcpPrintConfig(f *Factory, cmd *cobra.Command, client string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("mcp: find this binary: %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	args := []string{"mcp"}
	if cmd.Flags().Changed("home") || os.Getenv("AGENTCTL_HOME") != "" || f.Home != mustAbs(DefaultHome) {
		args = append(args, "--home", f.Home)
	}
	jsonCfg := func() string {
		b, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{"agentctl": map[string]any{"command": exe, "args": args}}}, "", "  ")
		return string(b)
	}
	switch client {
	case "claude":
		fmt.Fprintf(f.Out, "# Claude Code: run this (add --scope project to share it in .mcp.json)\nclaude mcp add agentctl -- %s\n\n# or put this in .mcp.json at the project's root:\n%s\n",
			shellJoin(append([]string{exe}, args...)), jsonCfg())
	case "codex":
		q := make([]string, len(args))
		for i, a := range args {
			q[i] = tomlString(a)
		}
		fmt.Fprintf(f.Out, "# Codex: add to ~/.codex/config.toml\n[mcp_servers.agentctl]\ncommand = %s\nargs = [%s]\n", tomlString(exe), strings.Join(q, ", "))
	case "cursor":
		fmt.Fprintf(f.Out, "// Cursor: put this in .cursor/mcp.json (the project) or ~/.cursor/mcp.json (every project)\n%s\n", jsonCfg())
	default:
		return usageError{fmt.Errorf("mcp: --print-config %q: give one of %s", client, strings.Join(mcpClients, ", "))}
	}
	return nil
}

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

// tomlString is s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// shellJoin quotes each word for a POSIX shell.
func shellJoin(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if w != "" && strings.IndexFunc(w, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@", r))
		}) < 0 {
			out[i] = w
			continue
		}
		out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
