package ui

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
)

// Options configure a Server.
type Options struct {
	// Store is the home's sessions.
	Store recorder.Store
	// Remote, when set, adds the shared history CI runners pushed (read
	// only), as `query --remote` does.
	Remote []query.RemotePart
	// Fetch, set with Remote, brings a session the home does not have
	// from the remote into a store of its own (the remote's cache home, as
	// `show --remote` reads it) and returns that store and the session's
	// full id: the session pages of the remote's sessions read from there.
	Fetch func(ctx context.Context, ref string) (recorder.Store, string, error)
	// Token authenticates every request. Empty makes a random one.
	Token string
	// Generator names what serves the pages ("agentctl v1.2.3").
	Generator string
	// Warn receives what the history could not read (damaged logs).
	Warn io.Writer
}

// Server is the web app over one home. Its handlers may run concurrently;
// the query database is shared behind a lock (DuckDB's connection is not
// the place to learn about concurrent readers of one home).
type Server struct {
	opts  Options
	token string
	csrf  string
	// hosts are the Host headers this server answers to; nil accepts any
	// (a non-loopback listen, where the token is what keeps others out).
	hosts map[string]bool

	// whole admits one read of a whole session log at a time (a page's
	// figures, its diagnosis): each holds a lean fold, so however many
	// pages are open the server holds one.
	whole chan struct{}

	// logSizes are the log sizes, when the database was opened, of the
	// sessions it read from their logs.
	logSizes map[string]int64

	dbMu   sync.Mutex
	db     *query.DB
	dbSeen dbStamp
	// made holds what pages derived from the database since it was
	// opened (perDB), so that it is made once per opening, not once per
	// request.
	made map[string]any

	// A big history (bigHistory sessions or more) is opened again in the
	// background when it changed: opening it and making the runs index
	// takes about a second at 100,000 sessions, which every page would
	// otherwise wait for after each new session. Pages answer from the
	// database they have until the next one is ready (nextDB), which
	// the first request after that adopts.
	bigHistory int
	nextMu     sync.Mutex
	opening    bool
	nextDB     *openedDB
	nextErr    error
}

// bigHistory is how many sessions make a history big enough to be
// opened again in the background.
const bigHistory = 10000

// openedDB is a database opened with what the pages derive from it.
type openedDB struct {
	db       *query.DB
	seen     dbStamp
	made     map[string]any
	logSizes map[string]int64
}

// dbStamp is what tells that the history changed since the database was
// opened: the sessions folder's modification time and entry count.
type dbStamp struct {
	mod time.Time
	n   int
	// settled: mod was already in the past when seen, so any change
	// since would have given the folder a later time.
	settled bool
}

func (a dbStamp) same(b dbStamp) bool { return a.mod.Equal(b.mod) && a.n == b.n }

// New makes a server; Listen binds it.
func New(opts Options) (*Server, error) {
	if opts.Warn == nil {
		opts.Warn = io.Discard
	}
	tok := opts.Token
	if tok == "" {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("ui: make a token: %w", err)
		}
		tok = hex.EncodeToString(b)
	}
	if len(tok) < 16 {
		return nil, errors.New("ui: the token must be at least 16 characters (leave it empty for a random one)")
	}
	m := hmac.New(sha256.New, []byte(tok))
	m.Write([]byte("agentctl-ui csrf"))
	return &Server{opts: opts, token: tok, csrf: hex.EncodeToString(m.Sum(nil)), whole: make(chan struct{}, 1), bigHistory: bigHistory}, nil
}

// Token is the token every request must carry.
func (s *Server) Token() string { return s.token }

// Listen binds addr ("127.0.0.1:0" picks a port) and fixes the Host names
// the server answers to: on loopback, the address itself and localhost at
// its port, so a page on another site that resolves its own name to
// 127.0.0.1 (DNS rebinding) is refused.
func (s *Server) Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ui: listen on %s: %w (give another --listen address, or port 0 for any free one)", addr, err)
	}
	s.hosts = hostsFor(ln.Addr().(*net.TCPAddr))
	return ln, nil
}

func hostsFor(a *net.TCPAddr) map[string]bool {
	if !a.IP.IsLoopback() {
		return nil
	}
	port := fmt.Sprint(a.Port)
	h := map[string]bool{}
	for _, name := range []string{a.IP.String(), "localhost", "127.0.0.1", "::1"} {
		h[net.JoinHostPort(name, port)] = true
	}
	return h
}

// URL is the address to open: the listener's, with the token, as Jupyter
// prints it.
func (s *Server) URL(ln net.Listener) string {
	return "http://" + ln.Addr().String() + "/?token=" + url.QueryEscape(s.token)
}

// Serve answers on ln until ctx is done.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.hosts == nil {
		if a, ok := ln.Addr().(*net.TCPAddr); ok {
			s.hosts = hostsFor(a)
		}
	}
	// Requests live under ctx: a live page's event stream ends when the
	// server stops instead of holding Shutdown for its timeout.
	hs := &http.Server{
		BaseContext:       func(net.Listener) context.Context { return ctx },
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(shut)
	s.Close()
	return nil
}

// readWhole waits for the turn to read a whole session log; release ends
// it. A request that goes away stops waiting.
func (s *Server) readWhole(ctx context.Context) (release func(), err error) {
	select {
	case s.whole <- struct{}{}:
		return func() { <-s.whole }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close releases the query database (and one opened in the background,
// once its opening ends).
func (s *Server) Close() error {
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	s.nextMu.Lock()
	if s.nextDB != nil {
		s.nextDB.db.Close()
		s.nextDB = nil
	}
	s.opening = false // an opening that ends now closes what it opened
	s.nextMu.Unlock()
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	return err
}

// WithDB runs fn with the history's query database, opened on first use
// and opened again when the home's sessions changed since, so the pages
// show sessions recorded while the server runs: at once for a small
// history, in the background for a big one (see bigHistory), whose pages
// meanwhile answer from the history as it was. Calls are serialised.
func (s *Server) WithDB(ctx context.Context, fn func(*query.DB) error) error {
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	s.adoptNext()
	st := s.stamp()
	if s.db != nil && (!st.same(s.dbSeen) || s.logsChanged()) {
		if s.big() {
			s.openInBackground(st)
			return fn(s.db)
		}
		s.db.Close()
		s.db = nil
	}
	if s.db == nil {
		o, err := s.open(ctx, st)
		if err != nil {
			return err
		}
		s.use(o)
	}
	return fn(s.db)
}

// open opens the database and notes what tells when it is out of date.
func (s *Server) open(ctx context.Context, st dbStamp) (*openedDB, error) {
	db, err := s.openDB(ctx)
	if err != nil {
		return nil, err
	}
	o := &openedDB{db: db, seen: st, made: map[string]any{}, logSizes: map[string]int64{}}
	for id := range db.Logs() {
		o.logSizes[id] = s.logSize(id)
	}
	return o, nil
}

func (s *Server) use(o *openedDB) {
	s.db, s.dbSeen, s.made, s.logSizes = o.db, o.seen, o.made, o.logSizes
}

// big reports whether the history open now has bigHistory sessions or
// more (the runs index, once made, counts them).
func (s *Server) big() bool {
	x, ok := s.made["runs"].(*runIndex)
	return ok && len(x.idEnd) >= s.bigHistory
}

// openInBackground opens the history as of st, with its runs index,
// unless an opening is under way; adoptNext takes it in. Called with
// dbMu held.
func (s *Server) openInBackground(st dbStamp) {
	s.nextMu.Lock()
	defer s.nextMu.Unlock()
	if s.opening || s.nextDB != nil {
		return
	}
	s.opening = true
	_, searched := s.made["runs-text"] // made again too, when pages searched
	go func() {
		ctx := context.Background()
		o, err := s.open(ctx, st)
		if err == nil {
			var x *runIndex
			if x, err = loadRunIndex(ctx, o.db); err == nil {
				o.made["runs"] = x
				if searched {
					if ti, terr := loadTextIndex(ctx, o.db, x); terr == nil {
						o.made["runs-text"] = ti
					}
				}
			} else {
				o.db.Close()
			}
		}
		s.nextMu.Lock()
		defer s.nextMu.Unlock()
		if !s.opening { // closed meanwhile
			if err == nil {
				o.db.Close()
			}
			return
		}
		s.opening = false
		if err != nil {
			s.nextErr = err
			return
		}
		s.nextDB = o
	}()
}

// adoptNext replaces the database with the one opened in the background,
// when it is ready. A failed opening is forgotten: the next change, or
// this one seen again, tries once more. Called with dbMu held.
func (s *Server) adoptNext() {
	s.nextMu.Lock()
	o, err := s.nextDB, s.nextErr
	s.nextDB, s.nextErr = nil, nil
	s.nextMu.Unlock()
	if err != nil {
		fmt.Fprintf(s.opts.Warn, "agentctl ui: reading the changed history: %v (the pages show it as it was; the next request tries again)\n", err)
	}
	if o == nil {
		return
	}
	if s.db != nil {
		s.db.Close()
	}
	s.use(o)
}

// logsChanged is true when a session the database read from its log (not
// from the sealed history: a running session, or one not sealed yet) has
// a log of another size now: a run that went on or finished shows its new
// figures and status on the next page, not when the next session starts.
func (s *Server) logsChanged() bool {
	for id, size := range s.logSizes {
		if s.logSize(id) != size {
			return true
		}
	}
	return false
}

func (s *Server) logSize(id string) int64 {
	fi, err := os.Stat(s.opts.Store.LogPath(id))
	if err != nil {
		return -1
	}
	return fi.Size()
}

// perDB returns what make made the first time it was called with key
// since the database was opened; a page calls it inside WithDB for what it
// derives from the views and reads on every request (the runs page's
// index). A failed make runs again next time.
func (s *Server) perDB(key string, make func() (any, error)) (any, error) {
	if v, ok := s.made[key]; ok {
		return v, nil
	}
	v, err := make()
	if err != nil {
		return nil, err
	}
	s.made[key] = v
	return v, nil
}

// stamp reads the sessions folder's stamp. Counting its entries costs
// ~45 ms at 100,000 sessions, on every request: it is skipped when the
// folder's time is the one seen and was settled then. Only a time within
// the clock's granularity of the moment it was seen can hide a second
// change, and the count tells those apart.
func (s *Server) stamp() dbStamp {
	dir := s.opts.Store.Root + "/sessions"
	fi, err := os.Stat(dir)
	if err != nil {
		return dbStamp{}
	}
	if s.db != nil && s.dbSeen.settled && fi.ModTime().Equal(s.dbSeen.mod) {
		return s.dbSeen
	}
	ids, _ := s.opts.Store.IDs()
	st := dbStamp{mod: fi.ModTime(), n: len(ids), settled: time.Since(fi.ModTime()) > 2*time.Second}
	if s.db != nil && st.same(s.dbSeen) {
		s.dbSeen.settled = st.settled
	}
	return st
}

// route is one page or endpoint.
type route struct {
	// pattern is a net/http ServeMux pattern ("GET /runs").
	pattern string
	// nav is the page's name in the navigation bar; empty keeps it out.
	nav string
	// navPath is where the navigation link goes (the pattern's path).
	navPath string
	// order places it in the navigation.
	order int
	// serverOnly keeps a page that needs the server (approvals, SQL) out
	// of a static export and its navigation.
	serverOnly bool
	// values lists, for a route with one wildcard, the values a static
	// export writes a page for (the suites of /evals/{suite}); the
	// session page's are the exported sessions.
	values func(ctx context.Context, s *Server) ([]string, error)
	handle func(*Ctx) error
}

var routes []route

// register adds a page; each page file calls it from init.
func register(r route) { routes = append(routes, r) }

func navRoutes() []route {
	var out []route
	for _, r := range routes {
		if r.nav != "" {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].order < out[j].order })
	return out
}

// Handler is the whole app behind its guard.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", assetHandler()))
	for _, r := range routes {
		r := r
		mux.HandleFunc(r.pattern, func(w http.ResponseWriter, req *http.Request) {
			c := &Ctx{W: w, R: req, S: s}
			if err := r.handle(c); err != nil {
				c.fail(err)
			}
		})
	}
	return s.guard(mux)
}

// openDB opens a query database over the home (and the remote): the
// shared one of WithDB, or one of its own for a page that must change it
// (the SQL page confines its own, which cannot be undone).
func (s *Server) openDB(ctx context.Context) (*query.DB, error) {
	if len(s.opts.Remote) > 0 {
		return query.OpenRemote(ctx, s.opts.Store.Root, s.opts.Warn, s.opts.Remote)
	}
	return query.OpenStore(ctx, s.opts.Store, s.opts.Warn)
}
