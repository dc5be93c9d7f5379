package query

import (
	"context"
	"fmt"
	"io"
	"strings"

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

// remoteParts returns the SELECTs of the remote parts for the events view.
func (d *DB) remoteParts() []string {
	var plain, out []string
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
		if len(excl) == 0 {
			plain = append(plain, quote(p.Path))
			continue
		}
		qs := make([]string, len(excl))
		for i, id := range excl {
			qs[i] = quote(id)
		}
		out = append(out, fmt.Sprintf("SELECT * FROM read_parquet(%s, hive_partitioning = false) WHERE session_id NOT IN (%s)", quote(p.Path), strings.Join(qs, ", ")))
	}
	if len(plain) > 0 {
		out = append([]string{fmt.Sprintf("SELECT * FROM read_parquet([%s], hive_partitioning = false, union_by_name = true)", strings.Join(plain, ", "))}, out...)
	}
	return out
}
