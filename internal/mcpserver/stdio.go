package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// drainWait bounds how long the server keeps answering after its input
// ends.
const drainWait = 60 * time.Second

// maxCounted is the longest line whose id is looked at: a request longer
// than this is not waited for at the end of input.
const maxCounted = 1 << 20

// Stdio is the transport of `agentctl mcp` on a process's stdin and
// stdout. Unlike the go-sdk's own, it answers every request it read
// before the input ended: a client that writes its requests and closes
// stdin (a script, `agentctl mcp < calls.jsonl`) gets each answer instead
// of a server that quits at EOF with calls in flight. It waits at most
// drainWait for them.
func Stdio(in io.Reader, out io.Writer) mcp.Transport {
	c := &counter{}
	c.cond = sync.NewCond(&c.mu)
	return &mcp.IOTransport{Reader: &drainReader{r: in, c: c}, Writer: &countWriter{w: out, c: c}}
}

// counter counts the requests read and the responses written.
type counter struct {
	mu                  sync.Mutex
	cond                *sync.Cond
	requests, responses int
}

// lines splits what passes through into lines and hands each whole line
// (up to maxCounted bytes) to fn.
type lines struct {
	buf  []byte
	long bool
}

func (l *lines) feed(p []byte, fn func([]byte)) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		if !l.long && len(l.buf)+len(part) <= maxCounted {
			l.buf = append(l.buf, part...)
		} else {
			l.long, l.buf = true, l.buf[:0]
		}
		if i < 0 {
			return
		}
		if !l.long {
			fn(l.buf)
		}
		l.buf, l.long, p = l.buf[:0], false, p[i+1:]
	}
}

// message is what counting needs of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

type drainReader struct {
	r io.Reader
	c *counter
	l lines
}

func (d *drainReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	d.l.feed(p[:n], func(line []byte) {
		var m message
		if json.Unmarshal(line, &m) == nil && len(m.ID) > 0 && m.Method != "" {
			d.c.mu.Lock()
			d.c.requests++
			d.c.mu.Unlock()
		}
	})
	if err == io.EOF {
		d.wait()
	}
	return n, err
}

// wait blocks until every request read has its response, or drainWait.
func (d *drainReader) wait() {
	ctx, cancel := context.WithTimeout(context.Background(), drainWait)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		d.c.mu.Lock()
		d.c.cond.Broadcast()
		d.c.mu.Unlock()
	})
	defer stop()
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	for d.c.responses < d.c.requests && ctx.Err() == nil {
		d.c.cond.Wait()
	}
}

func (d *drainReader) Close() error { return nil }

type countWriter struct {
	w io.Writer
	c *counter
	l lines
}

func (w *countWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.l.feed(p[:n], func(line []byte) {
		var m message
		if json.Unmarshal(line, &m) == nil && len(m.ID) > 0 && m.Method == "" {
			w.c.mu.Lock()
			w.c.responses++
			w.c.cond.Broadcast()
			w.c.mu.Unlock()
		}
	})
	return n, err
}

func (w *countWriter) Close() error { return nil }
