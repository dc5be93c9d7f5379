package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/recorder"
)

// CacheHome is the agentctl home in which FetchSession puts the sessions
// it downloads: commands that read a session (show, replay, bundle, view)
// run on it unchanged. It is never the user's home, so a remote session
// never shadows or mixes with a local one.
func (r *Remote) CacheHome() string { return filepath.Join(r.Dir, "home") }

// FetchSession downloads the log of the remote session ref (its id, or a
// prefix of it naming one session) into CacheHome, unless the cache holds
// it at the remote's ETag, and returns the session's id. The log is
// checked like any log handed over from elsewhere: one that fails the
// recorder's checks is returned with its error (matching
// recorder.ErrCorrupt for mid-log damage), left in the cache for
// inspection.
func (r *Remote) FetchSession(ctx context.Context, ref string) (string, error) {
	if ref == "" || strings.ContainsAny(ref, "/\\") {
		return "", fmt.Errorf("remote: %q is not a session id", ref)
	}
	objs, err := r.Store.List(ctx, sessionsPrefix+ref)
	if err != nil {
		return "", err
	}
	var ids []string
	etags := map[string]string{}
	sizes := map[string]int64{}
	for _, o := range objs {
		id, rest, ok := strings.Cut(strings.TrimPrefix(o.Key, sessionsPrefix), "/")
		if !ok || rest != recorder.LogFile || !safeID(id) {
			continue
		}
		if o.Size > MaxObjectBytes {
			return "", fmt.Errorf("remote: %s/%s is %d bytes, more than the %d this agentctl reads", r.Store, o.Key, o.Size, int64(MaxObjectBytes))
		}
		if id == ref {
			ids = []string{id}
			etags[id], sizes[id] = o.ETag, o.Size
			break
		}
		ids = append(ids, id)
		etags[id], sizes[id] = o.ETag, o.Size
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("%w matches %q in %s (sessions are pushed when they finish: agentctl history push)", recorder.ErrNoSession, ref, r.Store)
	case 1:
	default:
		return "", fmt.Errorf("%w %q matches %d sessions in %s: %s; give more of the id", recorder.ErrAmbiguous, ref, len(ids), r.Store, strings.Join(ids, ", "))
	}
	id := ids[0]
	unlock, err := history.LockDir(r.Dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	st := recorder.Store{Root: r.CacheHome()}
	logPath := st.LogPath(id)
	tagPath := filepath.Join(st.SessionDir(id), ".remote-etag")
	if b, err := os.ReadFile(tagPath); err == nil && string(b) == etags[id] && fileSize(logPath) >= 0 {
		return id, checkLog(logPath)
	}
	b, etag, err := r.Store.Get(ctx, LogKey(id), sizes[id])
	if errors.Is(err, ErrNotFound) {
		return "", fmt.Errorf("%w: %s was removed from %s since listed", recorder.ErrNoSession, id, r.Store)
	}
	if err != nil {
		return "", err
	}
	if err := writeAtomic(logPath, b, r.NoSync); err != nil {
		return "", err
	}
	if err := writeAtomic(tagPath, []byte(etag), r.NoSync); err != nil {
		return "", err
	}
	return id, checkLog(logPath)
}

func checkLog(p string) error {
	_, _, err := recorder.ReadFile(p)
	if err != nil {
		return fmt.Errorf("remote session log (cached at %s): %w", p, err)
	}
	return nil
}
