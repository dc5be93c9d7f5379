package collect

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentctl/agentctl/internal/clip"
	"golang.org/x/net/netutil"
)

// HTTPServer is the http.Server to serve s over OTLP/HTTP with: the
// headers must arrive within Config.ReadTimeout (the body's deadlines are
// ServeHTTP's own), and a keep-alive connection idle for
// Config.IdleTimeout is closed. Serve it on Listener(ln).
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: min(s.cfg.ReadTimeout, 10*time.Second),
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
}

// Listener bounds ln to Config.MaxConns connections at once: one more
// waits in the kernel's queue until one closes, so clients that connect
// and stay (idle, or stalling) cannot take every file descriptor.
func (s *Server) Listener(ln net.Listener) net.Listener {
	return netutil.LimitListener(ln, s.cfg.MaxConns)
}

// GRPCListener is Listener for the gRPC port, which also answers a client
// speaking HTTP/1 (an OTLP/HTTP exporter pointed at the gRPC port) with
// a 400 naming httpAddr, and says so in the log: gRPC itself would drop
// the connection without a word on either side.
func (s *Server) GRPCListener(ln net.Listener, httpAddr string) net.Listener {
	return &sniffListener{Listener: s.Listener(ln), s: s, httpAddr: httpAddr}
}

type sniffListener struct {
	net.Listener
	s        *Server
	httpAddr string
	lastLog  atomic.Int64 // unix nanos of the last line logged
	missed   atomic.Int64 // requests not logged since
}

func (l *sniffListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c, l: l}, nil
}

// sniffConn looks at the first bytes a client sends. gRPC writes its
// settings first; they are held until then, so an HTTP/1 client gets a
// plain HTTP answer and nothing of HTTP/2 before it.
type sniffConn struct {
	net.Conn
	l       *sniffListener
	mu      sync.Mutex
	decided bool
	h1      bool
	held    []byte // gRPC's writes before the client spoke
}

// http1Methods start an HTTP/1 request; an HTTP/2 client starts with
// "PRI * HTTP/2.0".
var http1Methods = [][]byte{[]byte("POST "), []byte("GET "), []byte("PUT "), []byte("HEAD "), []byte("OPTIONS ")}

func (c *sniffConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if !c.decided {
		c.held = append(c.held, p...)
		c.mu.Unlock()
		return len(p), nil
	}
	h1 := c.h1
	c.mu.Unlock()
	if h1 {
		return 0, net.ErrClosed
	}
	return c.Conn.Write(p)
}

func (c *sniffConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	decided, h1 := c.decided, c.h1
	c.mu.Unlock()
	if h1 {
		return 0, io.EOF
	}
	n, err := c.Conn.Read(p)
	if decided || (n == 0 && err == nil) {
		return n, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.decided = true
	for _, m := range http1Methods {
		if n >= len(m) && bytes.HasPrefix(p[:n], m) {
			c.h1, c.held = true, nil
			c.l.refuse(c.Conn, p[:n])
			return 0, io.EOF
		}
	}
	if len(c.held) > 0 {
		if _, werr := c.Conn.Write(c.held); werr != nil && err == nil {
			err = werr
		}
		c.held = nil
	}
	return n, err
}

// refuse answers an HTTP/1 request on the gRPC port and logs it (a line
// at most every 10 s, with how many came since).
func (l *sniffListener) refuse(c net.Conn, first []byte) {
	line := first
	if i := bytes.IndexAny(line, "\r\n"); i >= 0 {
		line = line[:i]
	}
	where := "the OTLP/HTTP port (--listen)"
	if l.httpAddr != "" {
		where = "http://" + l.httpAddr
	}
	msg := fmt.Sprintf("agentctl collect: this port speaks OTLP/gRPC; OTLP/HTTP goes to %s (or set OTEL_EXPORTER_OTLP_PROTOCOL=grpc)\n", where)
	c.SetWriteDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(msg), msg)
	now := time.Now().UnixNano()
	last := l.lastLog.Load()
	if now-last < int64(10*time.Second) || !l.lastLog.CompareAndSwap(last, now) {
		l.missed.Add(1)
		return
	}
	more := ""
	if n := l.missed.Swap(0); n > 0 {
		more = fmt.Sprintf(" (and %d more since the last line)", n)
	}
	l.s.cfg.Logf("agentctl collect: an HTTP/1 request (%q) from %s came to the gRPC port %s%s: OTLP/HTTP goes to %s; point the exporter there, or set OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		clip.Bytes(string(line), 80), c.RemoteAddr(), l.Addr(), more, where)
}
