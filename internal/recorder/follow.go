package recorder

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/vfs"
)

// FollowPoll is how often Follow looks for events appended since it last
// read.
const FollowPoll = 200 * time.Millisecond

// Follow hands fn every event of session id's log, in order, and then each
// one appended after, until the session ends: its session_finished is
// read, or no process holds its lease any more and nothing more is
// there (a collector closed it, or the writer died), or ctx is done. It
// reads the file as it grows, never again from the start, so following
// a long session costs what is appended. It returns fn's error, or a
// read error (a log damaged before its end: ErrCorrupt).
func (s Store) Follow(ctx context.Context, id string, fn func(session.Event) error) error {
	path := s.LogPath(id)
	f, err := vfs.OpenRegular(path)
	if err != nil {
		return s.notStarted(id, fmt.Errorf("recorder: follow: %w", err))
	}
	defer f.Close()
	gr := &growing{ctx: ctx, f: f, live: func() bool { return Live(s.SessionDir(id)) }}
	rd := &Reader{r: bufio.NewReaderSize(gr, 64<<10), path: path}
	for {
		ev, err := rd.Next()
		if err != nil {
			if errors.Is(err, ErrTornTail) || errors.Is(err, io.EOF) {
				return ctx.Err() // the end: what was whole was handed over
			}
			return err
		}
		if err := fn(ev); err != nil {
			return err
		}
		if ev.Kind == session.KindSessionFinished {
			gr.done = true
			return nil
		}
	}
}

// growing reads a log a writer may still append to: at the end of the
// file it waits for more while a process holds the lease, and ends (EOF)
// once none does and one more read finds nothing, or ctx is done.
type growing struct {
	ctx  context.Context
	f    *os.File
	live func() bool
	done bool
}

func (g *growing) Read(p []byte) (int, error) {
	for {
		n, err := g.f.Read(p)
		if n > 0 || (err != nil && !errors.Is(err, io.EOF)) {
			return n, err
		}
		if g.done || g.ctx.Err() != nil {
			return 0, io.EOF
		}
		if !g.live() {
			// The writer may have appended just before it let go.
			if n, err := g.f.Read(p); n > 0 {
				return n, err
			}
			return 0, io.EOF
		}
		select {
		case <-g.ctx.Done():
		case <-time.After(FollowPoll):
		}
	}
}
