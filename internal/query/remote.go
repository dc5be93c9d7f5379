package query

import (
	"context"
	"io"

	"github.com/agentctl/agentctl/internal/history"
)

// RemotePart is a Parquet file with the history's columns that came from
// elsewhere (package remote's cache of a bucket), to be queried with the
// home's own history.
type RemotePart struct {
	Path     string
	Sessions []string // the sessions with rows in the file
	Exclude  []string // those of them whose rows here are not live
	// Eval marks a file of eval report rows (history.EvalRow) instead:
	// it is read by the eval views, and Sessions and Exclude are unused.
	Eval bool
	// Key and Version name the object the file is a copy of (its key
	// in the bucket and a token of its ETag and size), and SummaryDir
	// is where its summary is kept (the remote cache's): with all three
	// the sessions view reads the file's summary, as it does a sealed
	// history file's, instead of folding its events at every opening.
	Key, Version, SummaryDir string
}

// OpenRemote is Open with remote parts added to the events view. A
// session the home has (sealed, or with a log) is read from the home
// only: its rows in the remote parts are left out, as are each part's
// Exclude.
func OpenRemote(ctx context.Context, home string, warn io.Writer, parts []RemotePart) (*DB, error) {
	if parts == nil {
		parts = []RemotePart{}
	}
	return open(ctx, history.New(home), warn, parts)
}

// remoteFiles returns the remote parts of the events view. A session
// the home has (sealed, or with a log) is read from the home only.
func (d *DB) remoteFiles() []filePart {
	var out []filePart
	for _, p := range d.remote {
		if p.Eval {
			continue
		}
		excl := append([]string(nil), p.Exclude...)
		for _, id := range p.Sessions {
			_, sealed := d.m.Sessions[id]
			_, logged := d.logs[id]
			if sealed || logged {
				excl = append(excl, id)
			}
		}
		if len(p.Sessions) > 0 && len(excl) >= len(p.Sessions) {
			continue
		}
		f := filePart{abs: p.Path, excl: excl}
		if p.Key != "" && p.Version != "" && p.SummaryDir != "" {
			f.rel, f.crc, f.sumDir = p.Key, p.Version, p.SummaryDir
		}
		out = append(out, f)
	}
	return out
}
