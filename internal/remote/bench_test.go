package remote_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/remote"
	"github.com/agentctl/agentctl/internal/remote/weedtest"
)

// benchSessions is the number of sessions the remote benchmarks move.
const benchSessions = 1000

var benchHome struct {
	once sync.Once
	home string
}

// benchSetup returns one home of benchSessions sealed sessions (shared by
// the benchmarks of a run) and a fresh SeaweedFS.
func benchSetup(b *testing.B) (home string, srv *weedtest.Server) {
	srv = weedtest.Start(b)
	benchHome.once.Do(func() {
		dir, err := os.MkdirTemp("", "agentctl-remote-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchHome.home = filepath.Join(dir, "home")
	})
	if _, err := os.Stat(filepath.Join(benchHome.home, "history")); err != nil {
		h := makeHome(b, "s", benchSessions)
		if err := os.Rename(h, benchHome.home); err != nil {
			b.Fatal(err)
		}
	}
	return benchHome.home, srv
}

// uploadFiles PUTs every file under dir at prefix/<relative path>, 8 at a
// time, with the same client: what 'aws s3 sync DIR s3://...' does.
func uploadFiles(ctx context.Context, st remote.Store, dir, prefix string, match func(string) bool) (int, error) {
	var paths []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && match(p) {
			paths = append(paths, p)
		}
		return nil
	})
	return len(paths), parallel(paths, func(p string) error {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		_, err = st.Put(ctx, prefix+filepath.ToSlash(rel), b, remote.Cond{})
		return err
	})
}

func parallel[T any](items []T, fn func(T) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, 8)
	for _, it := range items {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := fn(it); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// BenchmarkRemotePush: agentctl history push of 1,000 sealed sessions
// (their Parquet rows and logs) to a fresh prefix.
func BenchmarkRemotePush(b *testing.B) {
	home, srv := benchSetup(b)
	url := srv.Bucket(b, "bench", "push")
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		st, err := srv.Client(fmt.Sprintf("%s/%d", url, i))
		if err != nil {
			b.Fatal(err)
		}
		r := remote.New(st, home, nil)
		r.NoSync = true
		os.RemoveAll(r.Dir)
		res, err := r.Push(ctx, remote.PushOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if res.Sessions != benchSessions || res.Logs != benchSessions {
			b.Fatalf("push = %+v", res)
		}
	}
}

// BenchmarkRemotePushSync: the reference, 'aws s3 sync'-like: the same
// client PUTs the home's sealed Parquet files and logs as they are, one
// object per file, 8 at a time.
func BenchmarkRemotePushSync(b *testing.B) {
	home, srv := benchSetup(b)
	url := srv.Bucket(b, "bench", "sync")
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		st, err := srv.Client(fmt.Sprintf("%s/%d", url, i))
		if err != nil {
			b.Fatal(err)
		}
		n, err := uploadFiles(ctx, st, home, "", func(p string) bool {
			return strings.HasSuffix(p, ".parquet") || strings.HasSuffix(p, "events.log")
		})
		if err != nil || n < benchSessions {
			b.Fatalf("uploaded %d files: %v", n, err)
		}
	}
}

// pushedRemote pushes the bench home once and returns the remote's URL.
func pushedRemote(b *testing.B, home string, srv *weedtest.Server) string {
	url := srv.Bucket(b, "bench", "query")
	st, err := srv.Client(url)
	if err != nil {
		b.Fatal(err)
	}
	r := remote.New(st, home, nil)
	os.RemoveAll(r.Dir) // a record of an earlier server's push
	if _, err := r.Push(context.Background(), remote.PushOptions{}); err != nil {
		b.Fatal(err)
	}
	return url
}

// BenchmarkRemoteQueryCold: agentctl query --remote from an empty home
// (cold cache): list, download, check every object, open DuckDB over
// them, and count the sessions.
func BenchmarkRemoteQueryCold(b *testing.B) {
	home, srv := benchSetup(b)
	url := pushedRemote(b, home, srv)
	ctx := context.Background()
	for b.Loop() {
		st, _ := srv.Client(url)
		empty := b.TempDir()
		r := remote.New(st, empty, nil)
		r.NoSync = true
		snap, err := r.Pull(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var parts []query.RemotePart
		for _, p := range snap.Parts(nil) {
			parts = append(parts, query.RemotePart{Path: p.Path, Sessions: p.Sessions, Exclude: p.Exclude})
		}
		db, err := query.OpenRemote(ctx, empty, nil, parts)
		if err != nil {
			b.Fatal(err)
		}
		res, err := db.Query(ctx, "SELECT count(DISTINCT session_id) FROM events")
		db.Close()
		if err != nil || res.Rows[0][0].(int64) != benchSessions {
			b.Fatalf("query = %v, %v", res, err)
		}
	}
}

// BenchmarkRemoteQuerySync: the reference, 'aws s3 sync'-like: the same
// client lists history/ and downloads the same objects to a folder, 8 at
// a time, and reads nothing.
func BenchmarkRemoteQuerySync(b *testing.B) {
	home, srv := benchSetup(b)
	url := pushedRemote(b, home, srv)
	ctx := context.Background()
	for b.Loop() {
		st, _ := srv.Client(url)
		dir := b.TempDir()
		objs, err := st.List(ctx, "history/")
		if err != nil {
			b.Fatal(err)
		}
		err = parallel(objs, func(o remote.Object) error {
			body, _, err := st.Get(ctx, o.Key, o.Size)
			if err != nil {
				return err
			}
			p := filepath.Join(dir, filepath.FromSlash(o.Key))
			os.MkdirAll(filepath.Dir(p), 0o755)
			return os.WriteFile(p, body, 0o644)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
