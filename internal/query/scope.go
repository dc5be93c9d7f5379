package query

import (
	"context"
	"fmt"
)

// scopeViews are the views of schema scenario that hold one session's rows
// of the main views: an eval's sql: assertion names events, sessions,
// tool_calls and model_calls as usual and reads its own run only.
const scopeViews = `CREATE SCHEMA IF NOT EXISTS scenario;
CREATE OR REPLACE VIEW scenario.events AS SELECT * FROM main.events WHERE session_id = %[1]s;
CREATE OR REPLACE VIEW scenario.sessions AS SELECT * FROM main.sessions WHERE session_id = %[1]s;
CREATE OR REPLACE VIEW scenario.tool_calls AS SELECT * FROM main.tool_calls WHERE session_id = %[1]s;
CREATE OR REPLACE VIEW scenario.model_calls AS SELECT * FROM main.model_calls WHERE session_id = %[1]s`

// Scope limits what the views events, sessions and tool_calls show to the
// session id, for every query run on d afterwards: views of that name in
// a schema of their own come first in the search path. The scope holds
// through every reload (a compaction swapping the history's files makes
// the next query re-create the views): the main views are always made in
// schema main by name, and the scoped ones are made again after them, so
// no reload can leave an unscoped view where the scoped one was. Call it
// before Confine, which locks the search path.
func (d *DB) Scope(ctx context.Context, id string) error {
	if err := d.connect(); err != nil {
		return err
	}
	d.scope = id
	err := d.retry(ctx, func() error {
		if err := d.ensureDerived(ctx, "sessions"); err != nil {
			return err
		}
		return d.scopeViews(ctx)
	})
	if err != nil {
		return fmt.Errorf("query: scope the views to session %s: %w", id, err)
	}
	if _, err := d.db.ExecContext(ctx, "SET search_path = 'scenario,main'"); err != nil {
		return fmt.Errorf("query: scope the views to session %s: %w", id, err)
	}
	return nil
}

// scopeViews (re)makes the scoped views when d has a scope and the views
// they read exist.
func (d *DB) scopeViews(ctx context.Context) error {
	if d.scope == "" || !d.derived {
		return nil
	}
	if _, err := d.db.ExecContext(ctx, fmt.Sprintf(scopeViews, quote(d.scope))); err != nil {
		return fmt.Errorf("query: create views: %w", err)
	}
	return nil
}
