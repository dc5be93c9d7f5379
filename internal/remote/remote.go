package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentctl/agentctl/internal/history"
)

// Env names the variable that gives --remote its default.
const Env = "AGENTCTL_REMOTE"

// Dir is the folder of an agentctl home holding each remote's cache and
// push record, one subfolder per remote URL.
const Dir = "remote"

// Remote is an agentctl home's view of one remote: the Store, and the
// folder under the home where its cache and push record live.
type Remote struct {
	Store Store
	Home  string    // the agentctl home
	Dir   string    // <home>/remote/<hash of the store's name>
	Warn  io.Writer // warnings (a corrupt object skipped); io.Discard if nil
	// NoSync skips fsync of cache and record files (benchmarks, tests).
	NoSync bool
}

// URL is the remote a command was given: flag (its --remote) when set,
// else $AGENTCTL_REMOTE, "" when neither names one. Every command that
// takes --remote asks here, so the variable means the same to each.
func URL(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv(Env)
}

// Open connects to the S3 remote rawURL (s3://bucket/prefix) for home.
// An empty rawURL is taken from $AGENTCTL_REMOTE (URL).
func Open(ctx context.Context, rawURL, home string, warn io.Writer) (*Remote, error) {
	if rawURL = URL(rawURL); rawURL == "" {
		return nil, fmt.Errorf("remote: no remote given; pass --remote s3://bucket/prefix or set %s", Env)
	}
	st, err := NewS3(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	return New(st, home, warn), nil
}

// New returns the remote st of home.
func New(st Store, home string, warn io.Writer) *Remote {
	if warn == nil {
		warn = io.Discard
	}
	sum := sha256.Sum256([]byte(st.String()))
	return &Remote{Store: st, Home: home, Dir: filepath.Join(home, Dir, hex.EncodeToString(sum[:8])), Warn: warn}
}

// Keys of the layout (see the package doc).
const (
	historyPrefix  = "history/"
	sessionsPrefix = "sessions/"
	bundlesPrefix  = "bundles/"
	leaseKey       = "locks/compact.lease"
)

// parquetKey matches the history objects this package writes. Any other
// key under history/ is not read: a key decides a path in the cache, and
// the bucket is not trusted to choose paths.
var parquetKey = regexp.MustCompile(`^history/date=\d{4}-\d{2}-\d{2}/(push|seg)-[0-9a-f]{16}\.parquet$`)

// safeID reports whether id can name a session folder in the cache.
func safeID(id string) bool {
	if id == "" || len(id) > 128 || strings.HasPrefix(id, ".") {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// LogKey is the key of session id's log.
func LogKey(id string) string { return sessionsPrefix + id + "/events.log" }

// BundleKey is the key of session id's bundle.
func BundleKey(id string) string { return bundlesPrefix + id + ".tar.zst" }

func contentKey(partition, kind string, b []byte) string {
	sum := sha256.Sum256(b)
	return historyPrefix + partition + "/" + kind + "-" + hex.EncodeToString(sum[:8]) + ".parquet"
}

// isEvalKey reports whether key names an eval report object:
// history/evals/date=YYYY-MM-DD/eval-<digest/16>.parquet.
func isEvalKey(key string) bool {
	rel, ok := strings.CutPrefix(key, historyPrefix)
	return ok && history.IsEvalPath(rel)
}
