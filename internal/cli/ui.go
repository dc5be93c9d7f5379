package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/buildinfo"
	"github.com/agentctl/agentctl/internal/leanmem"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/remote"
	"github.com/agentctl/agentctl/internal/ui"
)

// uiTokenEnv is --token's default.
const uiTokenEnv = "AGENTCTL_UI_TOKEN"

type uiOptions struct {
	Listen string
	Open   bool
	Token  string
	Remote string
	JSON   bool
	// Export writes the pages as files instead of serving them.
	Export   string
	Sessions []string
	Since    string
}

func newUICmd(f *Factory, runF func(context.Context, *uiOptions) error) *cobra.Command {
	opts := &uiOptions{}
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve the history as a web app in your browser (runs, sessions, approvals, evals, cost, SQL)",
		Long: `Serve the home's history as a web app, from this binary alone (no network
needed), until Ctrl-C. It prints the URL to open; the URL carries a token
that every request must present (the page then keeps it in a cookie), as
Jupyter does. The server listens on loopback by default and answers only to
the address it listens on and localhost (a web page elsewhere cannot reach
it by a name it resolves to 127.0.0.1). The only change a page can make is
an approval, from the page itself.

--remote adds the shared history CI runners pushed ('agentctl history push'),
read-only, as 'query --remote' does.

--export DIR writes the same pages as files instead (a CI artifact that
opens from file:// with no server): DIR/index.html lists the sessions
chosen with --session and --since (every session without them), each with
its page, and the pages that need no server (pages that change or query,
approvals and SQL, are left out).`,
		Example: "  agentctl ui\n  agentctl ui --open\n  agentctl ui --export out/runs --since 2026-12-01\n  agentctl ui --listen 0.0.0.0:8080 --token \"$(openssl rand -hex 24)\"\n  agentctl ui --remote s3://ci-runs/agentctl",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return uiRun(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Listen, "listen", "127.0.0.1:0", "`HOST:PORT` to serve on (port 0 picks a free one); anything but loopback needs --token")
	fl.BoolVar(&opts.Open, "open", false, "open the URL in the browser ($BROWSER or the system's opener)")
	fl.StringVar(&opts.Token, "token", "", "the token requests must carry, at least 16 characters (env "+uiTokenEnv+"; default: a random one)")
	fl.StringVar(&opts.Remote, "remote", "", "also show this S3 remote's history `URL` (s3://bucket/prefix), read-only (env "+remote.Env+")")
	fl.BoolVar(&opts.JSON, "json", false, "print the address as one JSON line instead of text")
	fl.StringVar(&opts.Export, "export", "", "write the pages as static files into `DIR` (index.html first) instead of serving them")
	fl.StringArrayVar(&opts.Sessions, "session", nil, "with --export: export this session `ID` (repeat for more; default: every session)")
	fl.StringVar(&opts.Since, "since", "", "with --export: only sessions started since `WHEN` (2026-12-01, or an RFC 3339 time)")
	return cmd
}

func uiRun(ctx context.Context, f *Factory, opts *uiOptions) error {
	if opts.Export == "" && (len(opts.Sessions) > 0 || opts.Since != "") {
		return usageError{fmt.Errorf("ui: --session and --since choose what --export writes; give --export DIR")}
	}
	if opts.Token == "" {
		opts.Token = os.Getenv(uiTokenEnv)
	}
	host, _, err := net.SplitHostPort(opts.Listen)
	if err != nil {
		return usageError{fmt.Errorf("ui: --listen %q: want HOST:PORT, e.g. 127.0.0.1:0", opts.Listen)}
	}
	if !isLoopback(host) && opts.Token == "" {
		return usageError{fmt.Errorf("ui: --listen %s is not loopback: give --token (or %s) so that only you can open the pages", opts.Listen, uiTokenEnv)}
	}
	var parts []query.RemotePart
	var fetch func(context.Context, string) (recorder.Store, string, error)
	if url := remote.URL(opts.Remote); url != "" {
		parts, err = pullRemoteParts(ctx, f, url)
		if err != nil {
			return err
		}
		fetch = remoteFetcher(url, f)
	}
	srv, err := ui.New(ui.Options{Store: f.Store(), Remote: parts, Fetch: fetch, Token: opts.Token, Generator: "agentctl " + buildinfo.Version, Warn: f.Err})
	if err != nil {
		return usageError{err}
	}
	if opts.Export != "" {
		return uiExport(ctx, f, srv, opts)
	}
	ln, err := srv.Listen(opts.Listen)
	if err != nil {
		return err
	}
	u := srv.URL(ln)
	if opts.JSON {
		b, _ := json.Marshal(map[string]string{"kind": "listening", "address": ln.Addr().String(), "url": u})
		fmt.Fprintln(f.Out, string(b))
	} else {
		fmt.Fprintf(f.Out, "agentctl ui: %s\n", u)
		fmt.Fprintf(f.Err, "serving %s until Ctrl-C\n", f.Home)
	}
	if opts.Open {
		if err := openInBrowser(u); err != nil {
			fmt.Fprintf(f.Err, "agentctl ui: %v\n", err)
		}
	}
	// Pages read long sessions a record at a time, as view does: the
	// server keeps view's memory settings for its life.
	defer leanmem.Set()()
	return srv.Serve(ctx, ln)
}

// pullRemoteParts pulls the remote's history into its cache and names the
// parts the query database reads.
func pullRemoteParts(ctx context.Context, f *Factory, url string) ([]query.RemotePart, error) {
	r, err := remote.Open(ctx, url, f.Home, f.Err)
	if err != nil {
		return nil, err
	}
	snap, err := r.Pull(ctx)
	if err != nil {
		return nil, err
	}
	var parts []query.RemotePart
	for _, p := range snap.Parts(nil) {
		parts = append(parts, query.RemotePart{Path: p.Path, Sessions: p.Sessions, Exclude: p.Exclude,
			Key: p.Key, Version: p.Version, SummaryDir: snap.SummaryDir})
	}
	for _, p := range snap.EvalPaths() {
		parts = append(parts, query.RemotePart{Path: p, Eval: true})
	}
	return parts, nil
}

// uiExport writes the pages under opts.Export and says where.
func uiExport(ctx context.Context, f *Factory, srv *ui.Server, opts *uiOptions) error {
	defer srv.Close()
	ids := make([]string, len(opts.Sessions))
	for i, id := range opts.Sessions {
		// A prefix or "latest" as other commands take them; an id only
		// a remote has is given whole.
		if full, err := f.Store().Resolve(id); err == nil {
			id = full
		}
		ids[i] = id
	}
	res, err := srv.Export(ctx, opts.Export, ui.ExportOptions{Sessions: ids, Since: opts.Since})
	if err != nil {
		return err
	}
	if opts.JSON {
		b, _ := json.Marshal(map[string]any{"kind": "exported", "dir": res.Dir, "pages": res.Pages, "sessions": res.Sessions})
		fmt.Fprintln(f.Out, string(b))
		return nil
	}
	fmt.Fprintf(f.Out, "wrote %d pages (%d sessions): %s\n", res.Pages, res.Sessions, filepath.Join(res.Dir, "index.html"))
	return nil
}

// remoteFetcher fetches a session the home does not have from the remote
// into the remote's cache home, as `show --remote` does, for the session
// pages of pushed sessions. One fetch at a time: the cache is one folder.
func remoteFetcher(url string, f *Factory) func(context.Context, string) (recorder.Store, string, error) {
	var mu sync.Mutex
	return func(ctx context.Context, ref string) (recorder.Store, string, error) {
		mu.Lock()
		defer mu.Unlock()
		r, err := remote.Open(ctx, url, f.Home, f.Err)
		if err != nil {
			return recorder.Store{}, "", err
		}
		id, err := r.FetchSession(ctx, ref)
		return recorder.Store{Root: r.CacheHome()}, id, err
	}
}
