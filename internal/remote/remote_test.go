package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/query"
	"github.com/agentctl/agentctl/internal/recorder"
	"github.com/agentctl/agentctl/internal/remote"
	"github.com/agentctl/agentctl/internal/remote/weedtest"
	"github.com/agentctl/agentctl/internal/session"
)

// eventsPerSession is how many events makeHome records in each session.
const eventsPerSession = 4

// makeHome records n finished sessions (ids <tag>-0000, ...) in a new home,
// started on day (0 or 1 days after 2026-11-29, alternating), and seals
// them.
func makeHome(t testing.TB, tag string, n int) string {
	t.Helper()
	home := t.TempDir()
	st := recorder.Store{Root: home}
	ids := make([]string, n)
	for i := range n {
		id := fmt.Sprintf("%s-%04d", tag, i)
		ids[i] = id
		recordSession(t, st, id, time.Date(2026, 11, 29+i%2, 10, 0, 0, 0, time.UTC), session.StatusDone)
	}
	h := history.New(home)
	h.NoSync = true
	h.AutoCompactFiles = -1
	res, err := h.Seal(ids...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != "" {
			t.Fatal(r.Err)
		}
	}
	return home
}

func recordSession(t testing.TB, st recorder.Store, id string, start time.Time, status session.Status) {
	t.Helper()
	if _, err := st.WriteSession([]session.Event{
		{SessionID: id, TS: start, Kind: session.KindSessionStarted, Name: "fixture", Provider: "scripted", Model: "m"},
		{TS: start.Add(time.Second), Kind: session.KindUserMessage, Text: "hello " + id},
		{TS: start.Add(2 * time.Second), Kind: session.KindModelCall, Provider: "scripted", Model: "m", InputTokens: 10, OutputTokens: 3},
		{TS: start.Add(3 * time.Second), Kind: session.KindSessionFinished, Status: string(status)},
	}, recorder.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
}

// count runs one COUNT query over home plus the remote's history.
func count(t testing.TB, r *remote.Remote, home, q string) int64 {
	t.Helper()
	return queryOne(t, r, home, q).(int64)
}

// queryOne pulls the remote's history and runs q, whose answer is one
// value, over home plus it, as the CLI opens them (the objects'
// summaries kept in the cache).
func queryOne(t testing.TB, r *remote.Remote, home, q string) any {
	t.Helper()
	ctx := context.Background()
	snap, err := r.Pull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var parts []query.RemotePart
	for _, p := range snap.Parts(nil) {
		parts = append(parts, query.RemotePart{Path: p.Path, Sessions: p.Sessions, Exclude: p.Exclude,
			Key: p.Key, Version: p.Version, SummaryDir: snap.SummaryDir})
	}
	db, err := query.OpenRemote(ctx, home, os.Stderr, parts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Query(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	return res.Rows[0][0]
}

// stores returns the stores a test runs on: the in-memory one, and a real
// SeaweedFS when $AGENTCTL_WEED_BIN is set (one server per test).
func stores(t *testing.T) map[string]func(t *testing.T) remote.Store {
	return map[string]func(t *testing.T) remote.Store{
		"mem": func(t *testing.T) remote.Store { return &remote.Mem{} },
		"s3": func(t *testing.T) remote.Store {
			srv := weedtest.Start(t)
			url := srv.Bucket(t, "runs", "team/agentctl")
			st, err := remote.NewS3(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
	}
}

func keys(t testing.TB, st remote.Store, prefix string) []string {
	t.Helper()
	objs, err := st.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.Key)
	}
	return out
}

// TestStoreContract holds every Store to the conditional-write semantics
// the package relies on.
func TestStoreContract(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := mk(t)
			if _, _, err := st.Get(ctx, "a/missing", remote.MaxObjectBytes); !errors.Is(err, remote.ErrNotFound) {
				t.Fatalf("Get(missing) = %v, want ErrNotFound", err)
			}
			e1, err := st.Put(ctx, "a/x", []byte("one"), remote.Cond{IfAbsent: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Put(ctx, "a/x", []byte("two"), remote.Cond{IfAbsent: true}); !errors.Is(err, remote.ErrExists) {
				t.Fatalf("Put(IfAbsent) over an object = %v, want ErrExists", err)
			}
			if _, err := st.Put(ctx, "a/x", []byte("two"), remote.Cond{IfMatch: "0123456789abcdef0123456789abcdef"}); !errors.Is(err, remote.ErrExists) {
				t.Fatalf("Put(IfMatch wrong etag) = %v, want ErrExists", err)
			}
			b, etag, err := st.Get(ctx, "a/x", remote.MaxObjectBytes)
			if err != nil || string(b) != "one" || etag != e1 {
				t.Fatalf("Get = %q, %q, %v; want one, %q", b, etag, err, e1)
			}
			if _, _, err := st.Get(ctx, "a/x", 2); !errors.Is(err, remote.ErrTooLarge) || !strings.Contains(err.Error(), "a/x") {
				t.Fatalf("Get(max 2) of 3 bytes = %v, want ErrTooLarge naming a/x", err)
			}
			if b, _, err := st.Get(ctx, "a/x", 3); err != nil || string(b) != "one" {
				t.Fatalf("Get(max 3) of 3 bytes = %q, %v; want one", b, err)
			}
			e2, err := st.Put(ctx, "a/x", []byte("two"), remote.Cond{IfMatch: e1})
			if err != nil || e2 == e1 {
				t.Fatalf("Put(IfMatch right etag) = %q, %v", e2, err)
			}
			if err := st.Delete(ctx, "a/x", remote.Cond{IfMatch: e1}); !errors.Is(err, remote.ErrExists) {
				t.Fatalf("Delete(IfMatch stale etag) = %v, want ErrExists", err)
			}
			st.Put(ctx, "a/y", []byte("y"), remote.Cond{})
			st.Put(ctx, "b/z", []byte("z"), remote.Cond{})
			if got := strings.Join(keys(t, st, "a/"), ","); got != "a/x,a/y" {
				t.Fatalf("List(a/) = %s, want a/x,a/y", got)
			}
			if err := st.Delete(ctx, "a/x", remote.Cond{IfMatch: e2}); err != nil {
				t.Fatal(err)
			}
			if err := st.Delete(ctx, "a/never", remote.Cond{}); err != nil {
				t.Fatalf("Delete(missing) = %v, want nil", err)
			}
			if got := strings.Join(keys(t, st, ""), ","); got != "a/y,b/z" {
				t.Fatalf("List() = %s, want a/y,b/z", got)
			}
		})
	}
}

// TestPushTwiceUploadsNothing: a second push, and a push after a
// compaction merged the first push's objects away, upload nothing.
func TestPushTwiceUploadsNothing(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := mk(t)
			home := makeHome(t, "a", 6)
			r := remote.New(st, home, nil)
			res, err := r.Push(ctx, remote.PushOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// 6 sessions over two dates: two history objects, six logs.
			if res.Objects != 2 || res.Sessions != 6 || res.Rows != 6*eventsPerSession || res.Logs != 6 {
				t.Fatalf("first push = %+v, want 2 objects, 6 sessions, %d rows, 6 logs", res, 6*eventsPerSession)
			}
			before := keys(t, st, "")
			res, err = r.Push(ctx, remote.PushOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Objects != 0 || res.Logs != 0 || res.Existing != 0 {
				t.Fatalf("second push = %+v, want nothing uploaded", res)
			}
			if after := keys(t, st, ""); strings.Join(after, ",") != strings.Join(before, ",") {
				t.Fatalf("objects after the second push:\n%v\nwant\n%v", after, before)
			}
			// A fresh clone of the home (no push record) lands on the same keys.
			os.RemoveAll(r.Dir)
			res, err = r.Push(ctx, remote.PushOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Objects != 0 || res.Logs != 0 || res.Existing != 8 {
				t.Fatalf("push without a record = %+v, want 0 new, 8 existing", res)
			}
			if got := count(t, r, t.TempDir(), "SELECT count(*) FROM events"); got != 6*eventsPerSession {
				t.Fatalf("remote events = %d, want %d", got, 6*eventsPerSession)
			}
		})
	}
}

// TestTwoHomesPushAtOnce: two homes pushing to one remote together; a
// third home's query over the remote sees exactly both.
func TestTwoHomesPushAtOnce(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := mk(t)
			const na, nb = 25, 17
			homes := []string{makeHome(t, "a", na), makeHome(t, "b", nb)}
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i, h := range homes {
				wg.Go(func() { _, errs[i] = remote.New(st, h, nil).Push(ctx, remote.PushOptions{}) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			reader := remote.New(st, t.TempDir(), nil)
			empty := reader.Home
			if got := count(t, reader, empty, "SELECT count(*) FROM events"); got != (na+nb)*eventsPerSession {
				t.Fatalf("events = %d, want %d", got, (na+nb)*eventsPerSession)
			}
			if got := count(t, reader, empty, "SELECT count(*) FROM sessions WHERE status = 'done'"); got != na+nb {
				t.Fatalf("done sessions = %d, want %d", got, na+nb)
			}
			// Home a querying the remote: its own sessions come from it, once.
			ra := remote.New(st, homes[0], nil)
			if got := count(t, ra, homes[0], "SELECT count(*) FROM events"); got != (na+nb)*eventsPerSession {
				t.Fatalf("events from home a = %d, want %d", got, (na+nb)*eventsPerSession)
			}
			if got := len(keys(t, st, "sessions/")); got != na+nb {
				t.Fatalf("remote logs = %d, want %d", got, na+nb)
			}
		})
	}
}

// TestCompactMergesAndDedupes: compaction of objects from three pushes,
// one session pushed twice (resumed in between), leaves one segment per
// date with every session once.
func TestCompactMergesAndDedupes(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := mk(t)
			var homes []string
			for _, tag := range []string{"a", "b", "c"} {
				h := makeHome(t, tag, 4)
				homes = append(homes, h)
				if _, err := remote.New(st, h, nil).Push(ctx, remote.PushOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			// Session a-0000 grows by a second run and is pushed again.
			resumeAndSeal(t, homes[0], "a-0000")
			if _, err := remote.New(st, homes[0], nil).Push(ctx, remote.PushOptions{}); err != nil {
				t.Fatal(err)
			}
			want := int64(12*eventsPerSession + 1)
			reader := remote.New(st, t.TempDir(), nil)
			if got := count(t, reader, reader.Home, "SELECT count(*) FROM events"); got != want {
				t.Fatalf("events before compaction = %d, want %d", got, want)
			}
			if n := len(keys(t, st, "history/")); n != 7 {
				t.Fatalf("%d history objects before compaction, want 7", n)
			}
			res, err := reader.Compact(ctx, remote.CompactOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Merged != 7 || res.Segments != 2 || res.Rows != want {
				t.Fatalf("Compact = %+v, want 7 merged into 2 segments of %d rows", res, want)
			}
			ks := keys(t, st, "history/")
			if len(ks) != 2 || !strings.Contains(ks[0], "/seg-") || !strings.Contains(ks[1], "/seg-") {
				t.Fatalf("history after compaction = %v, want two segments", ks)
			}
			if got := count(t, reader, reader.Home, "SELECT count(*) FROM events"); got != want {
				t.Fatalf("events after compaction = %d, want %d", got, want)
			}
			if got := keys(t, st, "locks/"); len(got) != 0 {
				t.Fatalf("lease left behind: %v", got)
			}
			res, err = reader.Compact(ctx, remote.CompactOptions{})
			if err != nil || res.Merged != 0 {
				t.Fatalf("second Compact = %+v, %v; want nothing merged", res, err)
			}
		})
	}
}

func resumeAndSeal(t testing.TB, home, id string) {
	t.Helper()
	st := recorder.Store{Root: home}
	s, _, err := st.Open(id, recorder.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(session.Event{TS: time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC), Kind: session.KindUserMessage, Text: "again"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	h := history.New(home)
	h.NoSync = true
	h.AutoCompactFiles = -1
	if _, err := h.Seal(id); err != nil {
		t.Fatal(err)
	}
}

// TestLease: a held lease refuses a second compaction; an expired one is
// taken over, and its first holder then deletes nothing.
func TestLease(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := mk(t)
			home := makeHome(t, "a", 2)
			homeB := makeHome(t, "b", 2)
			remote.New(st, home, nil).Push(ctx, remote.PushOptions{})
			remote.New(st, homeB, nil).Push(ctx, remote.PushOptions{})
			if _, err := st.Put(ctx, "locks/compact.lease", fmt.Appendf(nil, `{"owner":"other host","expires":%q}`, time.Now().Add(time.Hour).UTC().Format(time.RFC3339)), remote.Cond{IfAbsent: true}); err != nil {
				t.Fatal(err)
			}
			r := remote.New(st, t.TempDir(), nil)
			_, err := r.Compact(ctx, remote.CompactOptions{})
			if !errors.Is(err, remote.ErrLeaseHeld) || !strings.Contains(err.Error(), "other host") {
				t.Fatalf("Compact under a held lease = %v, want ErrLeaseHeld naming the holder", err)
			}
			if n := len(keys(t, st, "history/")); n != 4 {
				t.Fatalf("%d history objects after a refused compaction, want 4", n)
			}
			// Expired: taken over.
			old, _, _ := st.Get(ctx, "locks/compact.lease", remote.MaxObjectBytes)
			_ = old
			st.Delete(ctx, "locks/compact.lease", remote.Cond{})
			st.Put(ctx, "locks/compact.lease", fmt.Appendf(nil, `{"owner":"dead host","expires":%q}`, time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)), remote.Cond{})
			res, err := r.Compact(ctx, remote.CompactOptions{})
			if err != nil || res.Merged != 4 {
				t.Fatalf("Compact over an expired lease = %+v, %v; want 4 merged", res, err)
			}
			// A compaction whose lease runs out before it deletes: nothing deleted.
			homeC := makeHome(t, "c", 2)
			remote.New(st, homeC, nil).Push(ctx, remote.PushOptions{})
			clock := time.Now()
			calls := 0
			now := func() time.Time {
				calls++
				if calls > 1 {
					return clock.Add(time.Hour) // the lease expired mid-compaction
				}
				return clock
			}
			before := keys(t, st, "history/")
			_, err = r.Compact(ctx, remote.CompactOptions{Now: now, Lease: time.Minute})
			if !errors.Is(err, remote.ErrLeaseLost) {
				t.Fatalf("Compact losing its lease = %v, want ErrLeaseLost", err)
			}
			after := keys(t, st, "history/")
			for _, k := range before {
				if !strings.Contains(strings.Join(after, ","), k) {
					t.Fatalf("%s deleted by a compaction that lost its lease", k)
				}
			}
			if got := count(t, r, r.Home, "SELECT count(*) FROM events"); got != 6*eventsPerSession {
				t.Fatalf("events = %d, want %d", got, 6*eventsPerSession)
			}
		})
	}
}

// TestCorruptObjectSkipped: a damaged object is named on the warning
// writer and left out; the rest answers.
func TestCorruptObjectSkipped(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := mk(t)
			home := makeHome(t, "a", 4)
			remote.New(st, home, nil).Push(ctx, remote.PushOptions{})
			objs, _ := st.List(ctx, "history/date=2026-11-29/")
			b, _, err := st.Get(ctx, objs[0].Key, remote.MaxObjectBytes)
			if err != nil {
				t.Fatal(err)
			}
			// The same object cut short, under a name of its own.
			bad := "history/date=2026-11-29/push-00000000000000ff.parquet"
			st.Put(ctx, bad, b[:len(b)/2], remote.Cond{})
			var warn bytes.Buffer
			r := remote.New(st, t.TempDir(), &warn)
			if got := count(t, r, r.Home, "SELECT count(*) FROM events"); got != 4*eventsPerSession {
				t.Fatalf("events = %d, want %d", got, 4*eventsPerSession)
			}
			if !strings.Contains(warn.String(), "skipping corrupt remote object "+st.String()+"/"+bad) {
				t.Fatalf("warnings = %q, want the corrupt object named", warn.String())
			}
			res, err := r.Compact(ctx, remote.CompactOptions{})
			if err != nil || res.Corrupt != 1 {
				t.Fatalf("Compact = %+v, %v; want the corrupt object left alone", res, err)
			}
			if ks := keys(t, st, bad); len(ks) != 1 {
				t.Fatalf("corrupt object deleted by compaction")
			}
		})
	}
}

// TestFetchSession: a session only in the remote is fetched into the
// cache home and checked; a damaged one reports recorder.ErrCorrupt.
func TestFetchSession(t *testing.T) {
	ctx := context.Background()
	st := &remote.Mem{}
	home := makeHome(t, "a", 2)
	remote.New(st, home, nil).Push(ctx, remote.PushOptions{})
	r := remote.New(st, t.TempDir(), nil)
	id, err := r.FetchSession(ctx, "a-0001")
	if err != nil || id != "a-0001" {
		t.Fatalf("FetchSession = %q, %v", id, err)
	}
	evs, _, err := recorder.Store{Root: r.CacheHome()}.Load(id)
	if err != nil || len(evs) != eventsPerSession {
		t.Fatalf("cached log: %d events, %v", len(evs), err)
	}
	if _, err := r.FetchSession(ctx, "a-"); !errors.Is(err, recorder.ErrAmbiguous) {
		t.Fatalf("FetchSession(prefix of two) = %v, want ErrAmbiguous", err)
	}
	if _, err := r.FetchSession(ctx, "zz"); !errors.Is(err, recorder.ErrNoSession) {
		t.Fatalf("FetchSession(unknown) = %v, want ErrNoSession", err)
	}
	b, _, _ := st.Get(ctx, remote.LogKey("a-0000"), remote.MaxObjectBytes)
	b[len(b)/2] ^= 0xff
	st.Put(ctx, remote.LogKey("a-0000"), b, remote.Cond{})
	if _, err := r.FetchSession(ctx, "a-0000"); !errors.Is(err, recorder.ErrCorrupt) {
		t.Fatalf("FetchSession(damaged) = %v, want ErrCorrupt", err)
	}
	if _, err := r.FetchSession(ctx, "../x"); err == nil {
		t.Fatal("FetchSession(../x) succeeded")
	}
}

// TestPushResumedLog: a finished session resumed and finished again has
// its remote log replaced (If-Match on the ETag this home pushed); a log
// another home changed meanwhile is not overwritten.
func TestPushResumedLog(t *testing.T) {
	ctx := context.Background()
	st := &remote.Mem{}
	home := makeHome(t, "a", 1)
	r := remote.New(st, home, nil)
	if _, err := r.Push(ctx, remote.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	rs := recorder.Store{Root: home}
	s, _, err := rs.Open("a-0000", recorder.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []session.Event{
		{TS: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), Kind: session.KindUserMessage, Text: "more"},
		{TS: time.Date(2026, 11, 29, 12, 0, 1, 0, time.UTC), Kind: session.KindSessionFinished, Status: string(session.StatusDone)},
	} {
		if _, err := s.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	res, err := r.Push(ctx, remote.PushOptions{})
	if err != nil || res.Logs != 1 {
		t.Fatalf("push after resume = %+v, %v; want the log uploaded again", res, err)
	}
	local, _ := os.ReadFile(rs.LogPath("a-0000"))
	got, _, _ := st.Get(ctx, remote.LogKey("a-0000"), remote.MaxObjectBytes)
	if !bytes.Equal(got, local) {
		t.Fatalf("remote log has %d bytes, want the local %d", len(got), len(local))
	}
	// Someone else rewrites it; this home's next change is not forced over it.
	st.Put(ctx, remote.LogKey("a-0000"), []byte("theirs"), remote.Cond{})
	s, _, _ = rs.Open("a-0000", recorder.Options{NoSync: true})
	s.Append(session.Event{TS: time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC), Kind: session.KindSessionFinished, Status: string(session.StatusDone)})
	s.Close()
	var warn bytes.Buffer
	r.Warn = &warn
	res, err = r.Push(ctx, remote.PushOptions{})
	if err != nil || res.Logs != 0 || res.Skipped != 1 || !strings.Contains(warn.String(), "changed since this home pushed it") {
		t.Fatalf("push over a changed log = %+v, %v, %q", res, err, warn.String())
	}
	if got, _, _ := st.Get(ctx, remote.LogKey("a-0000"), remote.MaxObjectBytes); string(got) != "theirs" {
		t.Fatalf("remote log overwritten")
	}
}

// TestHostileKeysIgnored: keys outside the layout never become paths.
func TestHostileKeysIgnored(t *testing.T) {
	ctx := context.Background()
	st := &remote.Mem{}
	home := makeHome(t, "a", 2)
	remote.New(st, home, nil).Push(ctx, remote.PushOptions{})
	objs, _ := st.List(ctx, "history/")
	b, _, _ := st.Get(ctx, objs[0].Key, remote.MaxObjectBytes)
	for _, k := range []string{"history/date=2026-11-29/../../../../evil.parquet", "history/evil.parquet", "history/date=2026-11-29/seg-XYZ.parquet"} {
		st.Put(ctx, k, b, remote.Cond{})
	}
	r := remote.New(st, t.TempDir(), nil)
	snap, err := r.Pull(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Objects) != len(objs) {
		t.Fatalf("pulled %d objects, want the %d of the layout", len(snap.Objects), len(objs))
	}
	filepath.WalkDir(filepath.Dir(r.Home), func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), "evil") {
			t.Errorf("hostile key written to %s", p)
		}
		return nil
	})
	if _, err := r.FetchSession(ctx, "../../x"); err == nil {
		t.Fatal("FetchSession(../../x) succeeded")
	}
}
