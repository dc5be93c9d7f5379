package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/agenthost"
	"github.com/agentctl/agentctl/internal/modelapi"
	"github.com/agentctl/agentctl/internal/provider"
	"github.com/agentctl/agentctl/internal/proxy"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/replaymatch"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
	"github.com/agentctl/agentctl/internal/termsafe"
)

type proxyOptions struct {
	Script   string
	Upstream string
	Replay   string
	Strict   bool
	Ignore   []string
	OnMiss   string
	Until    int
	Model    string
	Listen   string
	Port     int
	Token    string
	Name     string
	Session  string
	JSON     bool
	Command  []string
	Tags     []string
}

func newProxyCmd(f *Factory, runF func(context.Context, *proxyOptions) error) *cobra.Command {
	opts := &proxyOptions{}
	cmd := &cobra.Command{
		Use:   "proxy (--script FILE | --upstream URL | --replay SESSION) [flags] [-- COMMAND ARGS...]",
		Short: "Serve the model APIs (" + strings.Join(proxyProviders(), ", ") + ") on loopback, recording every call into a session",
		Long: `Serve the model APIs agents speak, streaming and not:

` + proxyRoutesHelp() + `
and record every call as session events: the agent's prompts and tool
results from its requests, the answers, tokens, cost and errors, and the raw
bodies (redacted) as artifacts.

Backends:
  --script FILE        agentctl's scripted model: no key, no network
  --upstream URL       forward to the real provider with the client's own key
                       (` + strings.Join(proxyUpstreams(), ",\n                       ") + `);
                       keys and cookies are never recorded
  --replay SESSION     serve a recorded session offline, call N by turn N,
                       whatever recorded it (proxy, collect, import, run):
                       each request is compared with the conversation the
                       session's events hold at that turn (system text,
                       messages, tool calls and results, tools, model), its
                       volatile spans (dates, durations, ids, temp and
                       workspace paths, harness context) normalised and
                       counted in the report; --ignore REGEX adds your own;
                       --strict normalises nothing. A real difference
                       answers an error naming the turn, the message and
                       both texts, and the exit is 6.
                       --on-miss upstream forwards from the first miss on
                       (needs --upstream); --until N replays N turns, then
                       goes on live with --upstream [--model ID]: a fork

Point the agent at http://127.0.0.1:PORT/s/<name>/v1 (OpenAI) or
http://127.0.0.1:PORT/s/<name> (Anthropic, Gemini) to record a session named by
you; without /s/<name> calls are grouped into sessions by history prefix. With
a COMMAND after --, the proxy runs it with these set to one session's URLs:
  ` + strings.Join(proxyBaseVars(), ", ") + `
and stops when it exits (with its exit code); the command's stdout is the
proxy's, byte for byte, and agentctl's own lines (--json ones too) go to
stderr.

A session ends done when the COMMAND exits 0 (or, without one, when the proxy
is stopped), failed when it exits non-zero. Its model calls overrule that: a
session whose every model call failed ends failed with the last error (the
proxy then exits 1 if the agent exited 0), and a replay that diverged ends
failed and exits 6, whatever the agent did with the error it was answered. A
session of which only some calls failed ends as its agent did.
The proxy binds 127.0.0.1 unless --listen names another address, which then
needs --token (clients send it as X-Agentctl-Token or a /t/<token> prefix).`,
		Example: `  agentctl proxy --script fixtures/models/fix-typo.yaml --json
  agentctl proxy --upstream https://api.openai.com/v1 -- python agent.py
  agentctl proxy --replay 3f2a -- node agent.mjs
  agentctl proxy --replay 3f2a --until 3 --upstream https://api.anthropic.com --model claude-opus-4-1 -- ./agent`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() < 0 && len(args) > 0 {
				return usageError{fmt.Errorf("unexpected argument %q: put the agent's command after --", args[0])}
			}
			opts.Command = args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return proxyRun(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Script, "script", "", "serve this scripted model (YAML turns)")
	fl.StringVar(&opts.Upstream, "upstream", "", "forward to this provider API root")
	fl.StringVar(&opts.Replay, "replay", "", "serve this recorded session (id or prefix)")
	fl.BoolVar(&opts.Strict, "strict", false, "replay: any difference is a divergence: no volatile span is normalised, metadata compares")
	fl.StringArrayVar(&opts.Ignore, "ignore", nil, "replay: also treat text matching this regular expression as volatile (repeatable)")
	fl.StringVar(&opts.OnMiss, "on-miss", "fail", "replay: on a divergence, fail or forward to the upstream")
	fl.IntVar(&opts.Until, "until", 0, "replay: serve turns 1..N from the recording, then go live on --upstream")
	fl.StringVar(&opts.Model, "model", "", "the live turns of a fork ask for this model ([PROVIDER/]ID)")
	fl.StringVar(&opts.Listen, "listen", "127.0.0.1", "address to bind; anything but loopback needs --token")
	fl.IntVar(&opts.Port, "port", 0, "port to bind; 0 picks a free one")
	fl.StringVar(&opts.Token, "token", os.Getenv("AGENTCTL_PROXY_TOKEN"), "token every client must send (env AGENTCTL_PROXY_TOKEN)")
	fl.StringVar(&opts.Name, "name", "proxy", "name of the sessions recorded")
	fl.StringVar(&opts.Session, "session", "", "with a COMMAND: the id of the session it records (default a new one)")
	fl.StringArrayVar(&opts.Tags, "tag", nil, "label every session recorded KEY=VALUE (repeatable; the sessions view's tags, sessions --tag)")
	fl.BoolVar(&opts.JSON, "json", false, "print the listening address, then the result, as JSON lines")
	return cmd
}

// served lists, sorted and once each, what of sets the registered APIs
// the proxy serves (those with a wire) give: the help is made from the
// registry, so a new API shows in it without an edit here.
func served(of func(modelapi.API) []string) []string {
	var out []string
	for _, a := range modelapi.All() {
		if a.Wire != nil {
			out = append(out, of(a)...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// proxyProviders names the providers whose APIs the proxy serves.
func proxyProviders() []string {
	return served(func(a modelapi.API) []string { return []string{a.Provider} })
}

// proxyUpstreams are the served APIs' public roots.
func proxyUpstreams() []string {
	return served(func(a modelapi.API) []string {
		if a.BaseURL == "" {
			return nil
		}
		return []string{a.BaseURL}
	})
}

// proxyRoutesHelp lists the routes each served API answers, in the
// order its wire gives them, a line per provider.
func proxyRoutesHelp() string {
	byProvider := map[string][]string{}
	for _, a := range modelapi.All() {
		if a.Wire == nil {
			continue
		}
		for _, r := range a.Wire.Routes() {
			if p := r.Method + " " + r.Path; !slices.Contains(byProvider[a.Provider], p) {
				byProvider[a.Provider] = append(byProvider[a.Provider], p)
			}
		}
	}
	var b strings.Builder
	for _, p := range proxyProviders() {
		line := fmt.Sprintf("  %-10s", p)
		for i, r := range byProvider[p] {
			sep := " "
			if i > 0 {
				sep = ", "
			}
			if len(line)+len(sep)+len(r) > 79 && i > 0 {
				b.WriteString(line + ",\n")
				line, sep = strings.Repeat(" ", 13), ""
			}
			line += sep + r
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// proxyBaseVars are the base-URL variables a COMMAND is given: the names
// spec.AgentEnv sets (BaseVars, the one list of them).
func proxyBaseVars() []string {
	told, others := spec.AgentEnv{}.BaseVars()
	for _, kv := range told {
		k, _, _ := strings.Cut(kv, "=")
		others = append(others, k)
	}
	slices.Sort(others)
	return others
}

// proxyListening is the first --json line: where the proxy listens.
type proxyListening struct {
	Kind             string `json:"kind"` // "listening"
	Address          string `json:"address"`
	URL              string `json:"url"`
	OpenAIBaseURL    string `json:"openai_base_url"`
	AnthropicBaseURL string `json:"anthropic_base_url"`
	// BaseURLs maps each registered model API's base-URL variable (the
	// one its SDKs read, spec.AgentEnv.BaseVars) to the URL to give it.
	BaseURLs map[string]string `json:"base_urls"`
}

// proxyResult is the last --json line: what was recorded and found.
type proxyResult struct {
	Kind     string          `json:"kind"` // "finished"
	Sessions []string        `json:"sessions"`
	Diverged bool            `json:"diverged"`
	Findings []proxy.Finding `json:"findings,omitempty"`
	// Normalised is what each normaliser changed in a replay (name,
	// count, turns); ContentCaptured false says the session recorded no
	// content, so only turn count, tool names and model were compared.
	Normalised      []replaymatch.Change `json:"normalised,omitempty"`
	ContentCaptured *bool                `json:"content_captured,omitempty"`
	// Ended is how each session ended (status, reason); AgentExitCode the
	// COMMAND's exit status, absent without one or when interrupted.
	Ended         []proxy.Ended `json:"ended"`
	AgentExitCode *int          `json:"agent_exit_code,omitempty"`
	// Warnings: what the user should check, e.g. that no model call
	// came through while the COMMAND ran.
	Warnings []string `json:"warnings,omitempty"`
	ExitCode int      `json:"exit_code"`
}

func isLoopback(host string) bool { return proxy.LoopbackHost(host) }

func proxyBackend(f *Factory, opts *proxyOptions) (proxy.Backend, *proxy.Replay, session.Event, error) {
	var hdr session.Event
	n := 0
	for _, s := range []string{opts.Script, opts.Replay} {
		if s != "" {
			n++
		}
	}
	if opts.Upstream != "" && opts.Replay == "" {
		n++
	}
	if n != 1 {
		return nil, nil, hdr, usageError{errors.New("give one backend: --script FILE, --upstream URL, or --replay SESSION (with --upstream for --on-miss upstream or --until)")}
	}
	if opts.OnMiss != "fail" && opts.OnMiss != "upstream" {
		return nil, nil, hdr, usageError{fmt.Errorf("--on-miss %q: want fail or upstream", opts.OnMiss)}
	}
	if opts.Replay == "" && (opts.Strict || opts.Until != 0 || opts.OnMiss != "fail" || len(opts.Ignore) > 0) {
		return nil, nil, hdr, usageError{errors.New("--strict, --ignore, --until and --on-miss only apply to --replay")}
	}
	if opts.Model != "" && opts.Upstream == "" {
		return nil, nil, hdr, usageError{errors.New("--model names the model of live turns: give --upstream too")}
	}
	var up proxy.Backend
	if opts.Upstream != "" {
		u, err := proxy.NewUpstream(opts.Upstream, nil)
		if err != nil {
			return nil, nil, hdr, usageError{err}
		}
		up = u
		if opts.Model != "" {
			_, id, ok := strings.Cut(opts.Model, "/")
			if !ok {
				id = opts.Model
			}
			up = proxy.WithModel(u, id)
		}
	}
	switch {
	case opts.Script != "":
		s, err := provider.LoadScript(opts.Script)
		if err != nil {
			return nil, nil, hdr, fmt.Errorf("--script %s: %w", opts.Script, err)
		}
		return proxy.NewScripted(s, ""), nil, hdr, nil
	case opts.Replay != "":
		if (opts.OnMiss == "upstream" || opts.Until > 0) && up == nil {
			return nil, nil, hdr, usageError{errors.New("--on-miss upstream and --until go on live: give --upstream URL")}
		}
		if opts.Until < 0 {
			return nil, nil, hdr, usageError{fmt.Errorf("--until %d: want a turn count", opts.Until)}
		}
		st := f.Store()
		id, err := st.Resolve(opts.Replay)
		if err != nil {
			return nil, nil, hdr, err
		}
		evs, _, err := st.Load(id)
		if err != nil {
			return nil, nil, hdr, err
		}
		sides, err := proxy.SideThreads(st, id)
		if err != nil {
			return nil, nil, hdr, fmt.Errorf("--replay %s: %w", id, err)
		}
		ignore, err := replaymatch.Ignores(opts.Ignore)
		if err != nil {
			return nil, nil, hdr, usageError{fmt.Errorf("--%w", err)}
		}
		dir, _ := os.Getwd()
		cfg := proxy.ReplayConfig{Events: evs, Strict: opts.Strict, Until: opts.Until, Sides: sides, Ignore: ignore, Dir: dir,
			Artifacts: func(rel string) ([]byte, error) { return proxy.ReadArtifact(st.SessionDir(id), rel) }}
		if opts.OnMiss == "upstream" {
			cfg.OnMiss = up
		}
		if opts.Until > 0 {
			cfg.Live = up
		}
		r, err := proxy.NewReplay(cfg)
		if err != nil {
			return nil, nil, hdr, fmt.Errorf("--replay %s: %w", id, err)
		}
		if r.Turns() == 0 {
			return nil, nil, hdr, fmt.Errorf("--replay %s: the session has no model calls to serve", id)
		}
		hdr.ParentSessionID = id
		if opts.Until > 0 {
			// A fork, as replay fork makes one: at the seq of its last
			// replayed call.
			hdr.ForkedFrom = r.TurnSeq(opts.Until)
		}
		hdr.Attrs, _ = json.Marshal(map[string]any{"replay_of": id, "strict": opts.Strict, "until": opts.Until, "on_miss": opts.OnMiss})
		return r, r, hdr, nil
	}
	return up, nil, hdr, nil
}

func proxyRun(ctx context.Context, f *Factory, opts *proxyOptions) error {
	if !isLoopback(opts.Listen) && opts.Token == "" {
		return usageError{fmt.Errorf("--listen %s is not loopback: give --token (or AGENTCTL_PROXY_TOKEN) so that only your clients can use the proxy", opts.Listen)}
	}
	if opts.Session != "" && len(opts.Command) == 0 {
		return usageError{errors.New("--session names the session of a COMMAND: give one after --, or put /s/<id> in the client's base URL")}
	}
	if opts.Session != "" {
		if _, err := f.Store().Resolve(opts.Session); err == nil {
			if _, err := os.Stat(f.Store().SessionDir(opts.Session)); err == nil {
				return fmt.Errorf("--session %s: that session exists; choose another id", opts.Session)
			}
		}
	}
	if opts.Port < 0 || opts.Port > 65535 {
		return usageError{fmt.Errorf("--port %d: want 0..65535", opts.Port)}
	}
	tags, err := session.ParseTags(opts.Tags)
	if err != nil {
		return usageError{fmt.Errorf("--tag: %w", err)}
	}
	backend, replay, hdr, err := proxyBackend(f, opts)
	if err != nil {
		return err
	}
	hdr.Name = opts.Name
	hdr.Attrs = session.WithTags(hdr.Attrs, tags, "")
	if len(opts.Command) > 0 {
		// The folder the agent runs in (source_cwd, as importers record
		// the source's): a replay from another folder takes it for the
		// workspace path it is (replaymatch), wherever the agent writes
		// it (gemini-cli's context and tool results).
		if dir, err := os.Getwd(); err == nil {
			var a map[string]any
			if json.Unmarshal(hdr.Attrs, &a) != nil || a == nil {
				a = map[string]any{}
			}
			a["source_cwd"] = dir
			hdr.Attrs, _ = json.Marshal(a)
		}
	}
	srv, err := proxy.New(proxy.Config{Backend: backend, Open: proxy.StoreSessions{Store: f.Store()}.Open, Header: hdr, Token: opts.Token,
		Logf: func(format string, args ...any) {
			if !opts.JSON {
				fmt.Fprintf(f.Err, format+"\n", args...)
			}
		}})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(opts.Listen, strconv.Itoa(opts.Port)))
	if err != nil {
		return fmt.Errorf("proxy: listen on %s port %d: %w", opts.Listen, opts.Port, err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second}
	go hs.Serve(ln)
	addr := ln.Addr().String()
	base := "http://" + addr
	if opts.Token != "" {
		base += "/t/" + opts.Token
	}
	told, _ := spec.AgentEnv{Base: base}.BaseVars()
	info := proxyListening{Kind: "listening", Address: addr, URL: base, OpenAIBaseURL: base + "/v1", AnthropicBaseURL: base, BaseURLs: map[string]string{}}
	for _, kv := range told {
		k, v, _ := strings.Cut(kv, "=")
		info.BaseURLs[k] = v
	}
	// With a COMMAND, stdout is the agent's, byte for byte (its JSON may be
	// piped on): agentctl's own lines, --json ones too, go to stderr.
	out := f.Out
	if len(opts.Command) > 0 {
		out = f.Err
	}
	if opts.JSON {
		b, _ := json.Marshal(info)
		fmt.Fprintln(out, string(b))
	} else {
		fmt.Fprintf(f.Err, "agentctl proxy listening on %s\n  %s\n", addr, strings.Join(told, "\n  "))
	}

	code := ExitOK
	var cmdErr error
	var cmdEnv spec.AgentEnv
	if len(opts.Command) > 0 {
		cmdEnv = spec.AgentEnv{Base: base + "/s/" + opts.Session, SessionID: opts.Session}
		if opts.Session == "" {
			id := recorder.NewSessionID()
			cmdEnv = spec.AgentEnv{Base: base + "/s/" + id, SessionID: id}
		}
		code, cmdErr = proxyCommand(ctx, f, opts, cmdEnv)
	} else {
		<-ctx.Done()
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	hs.Shutdown(shut)
	cancel()
	interrupted := len(opts.Command) > 0 && ctx.Err() != nil
	cerr := finishProxy(srv, opts, interrupted, code, cmdErr)
	res := proxyResult{Kind: "finished", Sessions: srv.Sessions(), Ended: srv.Ended()}
	if res.Sessions == nil {
		res.Sessions = []string{}
	}
	if res.Ended == nil {
		res.Ended = []proxy.Ended{}
	}
	if len(opts.Command) > 0 && !interrupted {
		res.AgentExitCode = &code
		if len(res.Sessions) == 0 && cmdErr == nil {
			res.Warnings = append(res.Warnings, noModelCall(opts.Command[0], cmdEnv))
		}
	}
	if replay != nil {
		res.Diverged, res.Findings = replay.Diverged(), replay.Findings()
		res.Normalised = replay.Normalised()
		if !replay.ContentCaptured() {
			no := false
			res.ContentCaptured = &no
		}
	}
	agentCode := code
	var failed []proxy.Ended
	for _, e := range res.Ended {
		if e.Status == session.StatusFailed {
			failed = append(failed, e)
		}
	}
	switch {
	case interrupted:
		code = ExitInterrupted
	case res.Diverged:
		// The divergence is the finding, whatever the agent did with the
		// error it was answered (many exit non-zero on it).
		code = ExitChecksFailed
	case code == ExitOK && len(failed) > 0:
		code = ExitError
	}
	res.ExitCode = code
	if opts.JSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(out, string(b))
	} else {
		ended := map[string]proxy.Ended{}
		for _, e := range res.Ended {
			ended[e.SessionID] = e
		}
		for _, id := range res.Sessions {
			fmt.Fprintf(out, "session %s", id)
			if e, ok := ended[id]; ok {
				fmt.Fprintf(out, " %s", e.Status)
				if e.Status == session.StatusFailed {
					fmt.Fprintf(out, ": %s", e.Reason)
				}
			}
			fmt.Fprintln(out)
		}
		for _, fd := range res.Findings {
			what := "note"
			switch {
			case fd.Forked:
				what = "forked"
			case fd.Fatal:
				what = "DIVERGED"
			}
			fmt.Fprintf(out, "%s: session %s turn %d: %s\n", what, fd.SessionID, fd.Turn, fd.What)
		}
		if res.ContentCaptured != nil {
			fmt.Fprintln(out, "note: the session recorded no content (collected with capture off): compared turn count, tool names and model only")
		}
		if sum := replaymatch.Summary(res.Normalised); sum != "" {
			fmt.Fprintf(out, "normalised: %s\n", sum)
		}
		for _, w := range res.Warnings {
			fmt.Fprintf(f.Err, "agentctl proxy: %s\n", termsafe.Line(w))
		}
	}
	if cmdErr != nil {
		return cmdErr
	}
	if cerr != nil {
		return cerr
	}
	switch {
	case code == ExitChecksFailed && res.Diverged:
		msg := "replay diverged: the agent's requests differ from the recording (see the DIVERGED lines)"
		if agentCode != ExitOK {
			msg += fmt.Sprintf("; the agent then exited with status %d", agentCode)
		}
		return withCode(code, errors.New(msg))
	case code == ExitError && agentCode == ExitOK && len(failed) > 0:
		var msgs []string
		for _, e := range failed {
			msgs = append(msgs, fmt.Sprintf("session %s failed: %s", e.SessionID, e.Reason))
		}
		return withCode(code, errors.New(strings.Join(msgs, "\n")))
	case code != ExitOK:
		return &exitError{Code: code}
	}
	return nil
}

// finishProxy ends the sessions the proxy opened with the agent's
// outcome: done when it exited 0 (or, with no COMMAND, when the proxy was
// stopped), failed when it exited non-zero or could not start,
// interrupted on a signal. Their model calls may overrule that
// (proxy.Server.Finish): a diverged replay, or a session whose every call
// failed, ends failed; a session of which only some calls failed ends as
// its agent did.
func finishProxy(srv *proxy.Server, opts *proxyOptions, interrupted bool, code int, cmdErr error) error {
	switch {
	case len(opts.Command) == 0:
		return srv.Close()
	case interrupted:
		return srv.Finish(session.StatusInterrupted, "signal: the agent was interrupted")
	case cmdErr != nil:
		return srv.Finish(session.StatusFailed, agenthost.ReasonAgentFailed+": "+cmdErr.Error())
	case code != ExitOK:
		return srv.Finish(session.StatusFailed, fmt.Sprintf("%s: the agent %s exited with status %d", agenthost.ReasonAgentFailed, opts.Command[0], code))
	}
	return srv.Finish(session.StatusDone, fmt.Sprintf("the agent %s exited with status 0", opts.Command[0]))
}

// noModelCall is the warning for a COMMAND that ended with no model call
// through the proxy: most often its client does not read the base-URL
// variables it was given (some take a flag or a config file instead), so
// the run went to the provider unrecorded, or made no call at all.
func noModelCall(command string, env spec.AgentEnv) string {
	given, others := env.BaseVars()
	return fmt.Sprintf("no model call came through the proxy while %s ran, so nothing was recorded. "+
		"It was given %s (also %s): check that its model client honours them "+
		"(some SDKs and CLIs take the base URL from a flag or a config file instead, or a value already set in that config wins) "+
		"and that it calls a model at all", command, strings.Join(given, " and "), strings.Join(append(others, "AGENTCTL_PROXY_URL"), ", "))
}

// proxyCommand runs the agent with the SDKs' base-URL variables (env)
// pointing at one session of the proxy, and returns its exit code.
func proxyCommand(ctx context.Context, f *Factory, opts *proxyOptions, agentEnv spec.AgentEnv) (int, error) {
	cmd := exec.CommandContext(ctx, opts.Command[0], opts.Command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = f.In, f.Out, f.Err
	env := append(os.Environ(), agentEnv.Vars()...)
	if opts.Upstream == "" {
		// No provider is reached: the SDKs still want a key to start
		// (every registered API's key variables: gemini-cli's
		// GEMINI_API_KEY too).
		seen := map[string]bool{}
		for _, a := range modelapi.All() {
			for _, k := range a.Env.Key {
				if !seen[k] && os.Getenv(k) == "" {
					seen[k] = true
					env = append(env, k+"=agentctl-proxy-no-key")
				}
			}
		}
	}
	cmd.Env = env
	agentGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return ExitOK, nil
	case errors.As(err, &ee):
		if ctx.Err() != nil {
			return ExitInterrupted, nil
		}
		return ee.ExitCode(), nil
	}
	return ExitError, fmt.Errorf("proxy: run %s: %w", opts.Command[0], err)
}
