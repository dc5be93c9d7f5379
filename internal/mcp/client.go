package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentctl/agentctl/internal/buildinfo"
	"github.com/agentctl/agentctl/internal/clip"
	"github.com/agentctl/agentctl/internal/redact"
	"github.com/agentctl/agentctl/internal/sandbox"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/tools"
)

// ProtocolVersion is the MCP protocol version agentctl asks for; servers
// may agree to an older one, which the header records.
const ProtocolVersion = "2025-11-25"

// MaxTools is the most tools one server may list. A server advertising
// more is refused at start: its list would flood every model request (and
// a hostile one could list millions).
const MaxTools = 512

// MaxToolBytes caps one tool's description plus input schema: every model
// request carries them, and the session header records them.
const MaxToolBytes = 64 << 10

// MaxSurfaceBytes caps the descriptions and schemas of all of one server's
// tools together: about a quarter of a million tokens in every model
// request already, and the header that records them must stay far below
// the log's record limit.
const MaxSurfaceBytes = 1 << 20

// MaxLine caps one JSON-RPC message from a stdio server; a longer line is
// a protocol error that ends the connection, not a memory exhaustion.
const MaxLine = 8 << 20

// MaxStderr caps what is kept of a server's stderr in its artifact; past
// it the rest is counted and dropped.
const MaxStderr = 4 << 20

// MetaIdempotencyKey is the key of the call's _meta object that carries the
// idempotency key of a side-effecting call, so a server can make a repeat
// after a crash harmless.
const MetaIdempotencyKey = "agentctl/idempotency_key"

// Transports.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
)

// Server configures one MCP server: a program on stdio (Command) or a
// streamable HTTP endpoint (URL).
type Server struct {
	// Name prefixes the server's tools: <name>__<tool>.
	Name string
	// Command is the program and its arguments; a bare program name is
	// looked up in PATH, a relative path with a slash is taken relative to
	// Dir.
	Command []string
	// Env is added to the server's otherwise scrubbed environment (PATH,
	// HOME=<workspace>, LANG, TMPDIR).
	Env map[string]string
	// URL is the streamable HTTP endpoint.
	URL string
	// Headers are sent with every HTTP request (values already read from
	// the environment by the caller).
	Headers map[string]string
	// Dir is the folder relative program paths are taken from (the spec's).
	Dir string
}

// Transport is TransportStdio or TransportHTTP.
func (s Server) Transport() string {
	if s.URL != "" {
		return TransportHTTP
	}
	return TransportStdio
}

// Env is where a server runs: the workspace (its working directory and
// the only writable folder), the sandbox that confines it, what its
// stderr is redacted with and where it goes.
type Env struct {
	Workspace string
	// Sandbox confines a stdio server (nil: the default policy) and, for
	// an HTTP server, decides which host:port it may reach (its network
	// policy and allowlist).
	Sandbox *sandbox.Config
	// Redactor redacts the server's stderr before it is written.
	Redactor *redact.Redactor
	// StderrPath, if set, receives the server's stderr, redacted, capped
	// at MaxStderr.
	StderrPath string
	// Extra holds KEY=VALUE pairs passed through from agentctl's
	// environment (the spec's sandbox.env).
	Extra []string
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ErrServer marks a failure of the server itself (it could not start,
// exited, hung, sent what is not MCP): the connection is dropped and the
// next call starts the server afresh.
var ErrServer = errors.New("mcp server failed")

// Client is the connection to one server. It connects when first needed,
// and drops the connection (killing a stdio server's sandbox) whenever the
// server fails, so the next use starts it afresh. Its methods are safe for
// concurrent use; calls to one server are serialized.
type Client struct {
	srv Server

	mu      sync.Mutex // serializes calls and guards the fields below
	sess    *sdk.ClientSession
	proc    *sandbox.Process
	stderr  *stderrFile
	envKey  string
	info    session.MCPServer
	started int // how many times the server was started
}

// NewClient returns a client of srv; nothing starts until it is used.
func NewClient(srv Server) *Client { return &Client{srv: srv} }

// Name is the server's name.
func (c *Client) Name() string { return c.srv.Name }

// Server returns the server's configuration.
func (c *Client) Server() Server { return c.srv }

// Starts reports how many times the server was started (for tests and
// the report of a restart).
func (c *Client) Starts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started
}

// Close drops the connection and stops a stdio server.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop()
}

// drop ends the connection; c.mu is held.
func (c *Client) drop() {
	if c.sess != nil {
		_ = c.sess.Close()
		c.sess = nil
	}
	if c.proc != nil {
		c.proc.Kill()
		c.proc = nil
	}
	if c.stderr != nil {
		c.stderr.Close()
		c.stderr = nil
	}
}

func envKey(env Env) string {
	b, _ := json.Marshal(struct {
		W string
		S *sandbox.Config
		P string
	}{env.Workspace, env.Sandbox, env.StderrPath})
	return string(b)
}

// connect makes sure a live connection made for env exists; c.mu is held.
// A connection made for another env (the discovery's scratch workspace) is
// dropped first.
func (c *Client) connect(ctx context.Context, env Env) (*sdk.ClientSession, error) {
	k := envKey(env)
	if c.sess != nil && c.envKey == k && (c.proc == nil || c.proc.Err() == nil && !closed(c.proc.Done())) {
		return c.sess, nil
	}
	c.drop()
	c.started++
	var transport sdk.Transport
	switch c.srv.Transport() {
	case TransportHTTP:
		hc, err := httpClient(c.srv, env.Sandbox)
		if err != nil {
			return nil, err
		}
		transport = &sdk.StreamableClientTransport{Endpoint: c.srv.URL, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
	default:
		p, errOut, err := c.start(env)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: could not start: %v", ErrServer, c.srv.Name, err)
		}
		c.proc, c.stderr = p, errOut
		transport = &sdk.IOTransport{Reader: p.Stdout, Writer: p.Stdin, MaxLineLength: MaxLine}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "agentctl", Version: buildinfo.Version}, nil)
	sess, err := client.Connect(ctx, transport, &sdk.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		err = c.explain(err)
		c.drop()
		return nil, fmt.Errorf("%w: %s: no MCP session: %v", ErrServer, c.srv.Name, err)
	}
	c.sess, c.envKey = sess, k
	c.info = session.MCPServer{Name: c.srv.Name, Transport: c.srv.Transport()}
	if ir := sess.InitializeResult(); ir != nil {
		c.info.ProtocolVersion = ir.ProtocolVersion
		if ir.ServerInfo != nil {
			c.info.ServerName, c.info.ServerVersion = ir.ServerInfo.Name, ir.ServerInfo.Version
		}
	}
	return sess, nil
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// start runs a stdio server in the sandbox.
func (c *Client) start(env Env) (*sandbox.Process, *stderrFile, error) {
	argv := append([]string(nil), c.srv.Command...)
	if len(argv) == 0 {
		return nil, nil, errors.New("no command")
	}
	if prog := argv[0]; !filepath.IsAbs(prog) && strings.Contains(prog, "/") && c.srv.Dir != "" {
		argv[0] = filepath.Join(c.srv.Dir, prog)
	}
	if !filepath.IsAbs(argv[0]) {
		p, err := exec.LookPath(argv[0])
		if err != nil {
			return nil, nil, err
		}
		argv[0] = p
	}
	if err := tools.CheckWorkspace(env.Workspace); err != nil {
		return nil, nil, err
	}
	extra := append([]string(nil), env.Extra...)
	keys := make([]string, 0, len(c.srv.Env))
	for k := range c.srv.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		extra = append(extra, k+"="+c.srv.Env[k])
	}
	cfg := tools.WithProgram(env.Sandbox, argv[0])
	errOut := openStderr(env.StderrPath, env.Redactor)
	p, err := cfg.Start(env.Workspace, argv, tools.ScrubbedEnv(env.Workspace, extra...), errOut)
	if err != nil {
		errOut.Close()
		return nil, nil, err
	}
	return p, errOut, nil
}

// explain adds what the server's death says to a connection error.
func (c *Client) explain(err error) error {
	if c.proc == nil {
		return err
	}
	select {
	case <-c.proc.Done():
	case <-time.After(200 * time.Millisecond):
		return err
	}
	why := "exited"
	if perr := c.proc.Err(); perr != nil {
		why = "exited: " + perr.Error()
	}
	if tail := c.stderr.Tail(); tail != "" {
		why += "; its stderr ends: " + tail
	}
	return fmt.Errorf("%v (the server %s)", err, why)
}

// List connects (in env) and returns the server's tools, as the header
// records them (SideEffects and Idempotent still unset) and the server's
// identity. A server that lists more than MaxTools tools, a tool whose
// name the model could not call, or a schema the validator cannot check
// is refused with an error naming it.
func (c *Client) List(ctx context.Context, env Env) (session.MCPServer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sess, err := c.connect(ctx, env)
	if err != nil {
		return session.MCPServer{}, err
	}
	var out []session.MCPTool
	surface := 0
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			err = c.explain(err)
			c.drop()
			return session.MCPServer{}, fmt.Errorf("%w: list the tools of %s: %v", ErrServer, c.srv.Name, err)
		}
		if len(out) >= MaxTools {
			c.drop()
			return session.MCPServer{}, fmt.Errorf("mcp: server %s lists more than %d tools; agentctl offers at most %d per server (a list that long would flood every model request)", c.srv.Name, MaxTools, MaxTools)
		}
		mt, err := recordTool(c.srv.Name, t)
		if err != nil {
			c.drop()
			return session.MCPServer{}, err
		}
		if surface += len(mt.InputSchema) + len(mt.Description) + len(mt.Annotations); surface > MaxSurfaceBytes {
			c.drop()
			return session.MCPServer{}, fmt.Errorf("mcp: server %s: its tools' descriptions and schemas take more than %d bytes together; agentctl offers a model at most that per server", c.srv.Name, MaxSurfaceBytes)
		}
		out = append(out, mt)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	for i := 1; i < len(out); i++ {
		if out[i].Name == out[i-1].Name {
			c.drop()
			return session.MCPServer{}, fmt.Errorf("mcp: server %s lists tool %q twice", c.srv.Name, out[i].Name)
		}
	}
	info := c.info
	info.Tools = out
	info.ToolsHash = session.MCPToolsHash(out)
	return info, nil
}

// recordTool turns a listed tool into its header record, refusing what
// cannot be offered to a model.
func recordTool(server string, t *sdk.Tool) (session.MCPTool, error) {
	full := ToolName(server, t.Name)
	if !nameRE.MatchString(t.Name) || len(full) > 64 {
		return session.MCPTool{}, fmt.Errorf("mcp: server %s lists a tool named %q, which a model cannot call: tool names are letters, digits, _ and -, and %s__<tool> at most 64 characters", server, clip.Bytes(t.Name, 80), server)
	}
	schema, err := json.Marshal(t.InputSchema)
	if err != nil || string(schema) == "null" {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	if n := len(schema) + len(t.Description); n > MaxToolBytes {
		return session.MCPTool{}, fmt.Errorf("mcp: server %s, tool %s: its description and schema take %d bytes, over the %d agentctl offers a model per tool", server, t.Name, n, MaxToolBytes)
	}
	if err := tools.CheckSchema(schema); err != nil {
		return session.MCPTool{}, fmt.Errorf("mcp: server %s, tool %s: its input schema cannot be checked: %v", server, t.Name, err)
	}
	mt := session.MCPTool{Name: t.Name, Description: t.Description, InputSchema: schema}
	if t.Annotations != nil {
		mt.Annotations, _ = json.Marshal(t.Annotations)
	}
	return mt, nil
}

// ToolName is the name the model calls a server's tool by.
func ToolName(server, tool string) string { return server + "__" + tool }

// callResult is what one tools/call produced.
type callResult struct {
	text    string
	isError bool
}

// Call calls tool with args on the server started in env, passing key (if
// any) in _meta. An error wrapping ErrServer means the server failed and
// was dropped; another error is the server's JSON-RPC answer (an unknown
// tool, invalid params) and leaves the connection up.
func (c *Client) Call(ctx context.Context, env Env, tool string, args json.RawMessage, key string) (callResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sess, err := c.connect(ctx, env)
	if err != nil {
		return callResult{}, err
	}
	var a map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &a); err != nil {
			return callResult{}, fmt.Errorf("arguments are not a JSON object: %v", err)
		}
	}
	p := &sdk.CallToolParams{Name: tool, Arguments: a}
	if key != "" {
		p.Meta = sdk.Meta{MetaIdempotencyKey: key}
	}
	res, err := sess.CallTool(ctx, p)
	if err != nil {
		var werr *jsonrpc.Error
		if errors.As(err, &werr) && ctx.Err() == nil {
			return callResult{}, fmt.Errorf("the server refused the call: %s", werr.Message)
		}
		err = c.explain(err)
		c.drop()
		return callResult{}, fmt.Errorf("%w: %v", ErrServer, err)
	}
	return callResult{text: resultText(res), isError: res.IsError}, nil
}

// resultText is what the model reads of a result: its text contents in
// order, other contents named by type and size, and the structured
// content as JSON when there is no text.
func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch v := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, v.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", v.MIMEType, len(v.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", v.MIMEType, len(v.Data)))
		case *sdk.EmbeddedResource:
			if v.Resource != nil && v.Resource.Text != "" {
				parts = append(parts, v.Resource.Text)
			} else if v.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s]", v.Resource.URI))
			}
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link %s]", v.URI))
		default:
			b, _ := json.Marshal(c)
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		parts = append(parts, string(b))
	}
	return strings.Join(parts, "\n")
}

// httpClient reaches an HTTP server only where the sandbox's network policy
// lets a tool reach: any host with network: allow; otherwise only the
// host:port pairs of the allowlist, checked at every dial and redirect.
func httpClient(srv Server, cfg *sandbox.Config) (*http.Client, error) {
	u, err := url.Parse(srv.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mcp: server %s: url %q is not an http(s) URL", srv.Name, srv.URL)
	}
	c := sandbox.Config{}
	if cfg != nil {
		c = *cfg
	}
	allowed := func(hostport string) bool {
		if c.Network == sandbox.NetworkAllow || c.Unconfined {
			return true
		}
		for _, a := range c.Allow {
			if strings.EqualFold(a, hostport) {
				return true
			}
		}
		return false
	}
	hostport := func(u *url.URL) string {
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		return net.JoinHostPort(u.Hostname(), port)
	}
	if hp := hostport(u); !allowed(hp) {
		return nil, fmt.Errorf("mcp: server %s: %s is not in sandbox.allow (the network is denied); add %q to sandbox.allow to reach it", srv.Name, hp, hp)
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	tr := &http.Transport{
		Proxy: nil, // a proxy would reach hosts the allowlist does not name
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if !allowed(addr) {
				return nil, fmt.Errorf("mcp: %s is not in sandbox.allow", addr)
			}
			return dialer.DialContext(ctx, network, addr)
		},
		MaxResponseHeaderBytes: 1 << 20,
	}
	return &http.Client{
		Transport: headerTransport{base: tr, headers: srv.Headers},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if !allowed(hostport(req.URL)) {
				return fmt.Errorf("mcp: redirect to %s, which is not in sandbox.allow", hostport(req.URL))
			}
			return nil
		},
	}, nil
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(req)
}

// stderrFile is a server's stderr: redacted, capped, written to the
// artifact, its last line kept for error messages.
type stderrFile struct {
	mu      sync.Mutex
	f       *os.File
	red     *redact.Redactor
	w       io.WriteCloser // redacting writer over f (or discard)
	written int64
	tail    []byte
}

func openStderr(path string, red *redact.Redactor) *stderrFile {
	s := &stderrFile{red: red}
	var dst io.Writer = io.Discard
	if path != "" {
		if f, err := tools.CreateArtifact(path); err == nil {
			// Appended: a restarted server's stderr follows the last one's.
			_, _ = f.Seek(0, io.SeekEnd)
			s.f, dst = f, f
		}
	}
	s.w = red.Writer(dst)
	return s
}

func (s *stderrFile) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	s.tail = append(s.tail, p...)
	if len(s.tail) > 4096 {
		s.tail = s.tail[len(s.tail)-4096:]
	}
	if room := MaxStderr - s.written; room > 0 {
		k := min(int64(len(p)), room)
		_, _ = s.w.Write(p[:k])
		s.written += k
	}
	return n, nil
}

// Tail is what the server's stderr says about why it died, redacted and
// clipped: the last line that names an error, else the last line that is
// not a runtime's sign-off. Runtimes end a crash with lines that say
// nothing of it (Node's "Node.js v20.20.2" after the stack, a Go
// goroutine dump, Python's traceback frames before the exception), and a
// message that quoted only the very last line named the runtime's
// version instead of the error.
func (s *stderrFile) Tail() string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return clip.Bytes(s.red.String(crashLine(string(s.tail))), 200)
}

// errorLine matches a line that states an error: "Error: …",
// "TypeError: …", "ModuleNotFoundError: …", "panic: …", "fatal: …",
// "error[E0425]: …", "ERROR …".
var errorLine = regexp.MustCompile(`^(?:Uncaught\s+)?(?:[A-Za-z_.$]*(?:Error|Exception)\b|panic:|fatal(?: error)?:|(?i:error)\b)`)

// signOff matches lines a runtime prints after the error that carry
// nothing of it: Node's version line, stack frames, a goroutine header, an
// "exit status" line, a closing brace of an error's printed properties.
var signOff = regexp.MustCompile(`^(?:Node\.js v\d|at |goroutine \d|exit status \d|[{}\]^]$|\[\w+\]$)`)

// crashLine picks the line of a crashed process's stderr tail that says
// why it crashed (see Tail).
func crashLine(tail string) string {
	lines := strings.Split(strings.TrimSpace(tail), "\n")
	fallback := ""
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		if errorLine.MatchString(l) {
			return l
		}
		if fallback == "" && !signOff.MatchString(l) {
			fallback = l
		}
	}
	if fallback == "" && len(lines) > 0 {
		fallback = strings.TrimSpace(lines[len(lines)-1])
	}
	return fallback
}

// Close flushes and closes the artifact.
func (s *stderrFile) Close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.w.Close()
	if s.f != nil {
		_ = s.f.Close()
	}
}
