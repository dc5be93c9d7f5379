package remote_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/remote"
)

// hostileS3 is an S3 endpoint that lists every object with a small size
// and serves a body far larger than that: enough of the S3 wire
// (ListObjectsV2, GetObject, path-style) for the real SDK client to talk
// to it. sent counts the body bytes it got onto the connection.
type hostileS3 struct {
	listed  int64 // the size every listing says
	served  int64 // the size every GET serves
	length  bool  // send Content-Length: served (else chunked)
	keys    []string
	sent    atomic.Int64
	gets    atomic.Int64
	srv     *httptest.Server
	objects string // key prefix in the bucket
}

func startHostileS3(t *testing.T, h *hostileS3) *hostileS3 {
	t.Helper()
	h.srv = httptest.NewServer(h)
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hostileS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if bucket != "runs" || r.Method != http.MethodGet {
		http.Error(w, "not spoken here", http.StatusNotImplemented)
		return
	}
	if key == "" && r.URL.Query().Get("list-type") == "2" {
		prefix := r.URL.Query().Get("prefix")
		var b strings.Builder
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>runs</Name>`)
		n := 0
		for _, k := range h.keys {
			if k = h.objects + k; strings.HasPrefix(k, prefix) {
				fmt.Fprintf(&b, `<Contents><Key>%s</Key><LastModified>2026-11-29T10:00:00.000Z</LastModified><ETag>&quot;0123456789abcdef0123456789abcdef&quot;</ETag><Size>%d</Size><StorageClass>STANDARD</StorageClass></Contents>`, k, h.listed)
				n++
			}
		}
		fmt.Fprintf(&b, `<Prefix>%s</Prefix><KeyCount>%d</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>`, prefix, n)
		w.Header().Set("Content-Type", "application/xml")
		w.Write([]byte(b.String()))
		return
	}
	h.gets.Add(1)
	w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
	w.Header().Set("Content-Type", "application/octet-stream")
	if h.length {
		w.Header().Set("Content-Length", fmt.Sprint(h.served))
	}
	w.WriteHeader(http.StatusOK)
	chunk := make([]byte, 1<<20)
	for left := h.served; left > 0; {
		n := int64(len(chunk))
		if left < n {
			n = left
		}
		m, err := w.Write(chunk[:n])
		h.sent.Add(int64(m))
		if err != nil {
			return // the client hung up
		}
		left -= n
	}
}

// TestListedSizeBoundsTheRead: a bucket that lists an object at 100 bytes
// and serves 3 GB gets a clear error naming the object, and agentctl
// reads no more than a little past the listed size (it once read the
// whole body into memory).
func TestListedSizeBoundsTheRead(t *testing.T) {
	const logKey = "sessions/evil-0001/events.log"
	const parquetKey = "history/date=2026-11-29/push-0123456789abcdef.parquet"
	pull := func(ctx context.Context, r *remote.Remote, warn *strings.Builder) error {
		snap, err := r.Pull(ctx)
		if err != nil {
			return err
		}
		// A damaged object does not fail the pull: it is named and left out.
		if len(snap.Parts(nil)) != 0 || !strings.Contains(warn.String(), "skipping corrupt remote object") {
			return fmt.Errorf("pull used the object; warnings: %q", warn)
		}
		return errors.New(warn.String())
	}
	fetch := func(ctx context.Context, r *remote.Remote, _ *strings.Builder) error {
		_, err := r.FetchSession(ctx, "evil-0001")
		if !errors.Is(err, remote.ErrTooLarge) {
			return fmt.Errorf("FetchSession = %v, want ErrTooLarge", err)
		}
		return err
	}
	for _, tc := range []struct {
		name   string
		length bool
		run    func(ctx context.Context, r *remote.Remote, warn *strings.Builder) error // the message the user sees
		key    string
	}{
		{"pull chunked", false, pull, parquetKey},
		{"pull content-length", true, pull, parquetKey},
		{"fetch chunked", false, fetch, logKey},
		{"fetch content-length", true, fetch, logKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startHostileS3(t, &hostileS3{listed: 100, served: 3 << 30, length: tc.length, objects: "p/", keys: []string{logKey, parquetKey}})
			st, err := remote.NewS3Static("s3://runs/p", h.srv.URL, "k", "s")
			if err != nil {
				t.Fatal(err)
			}
			var warn strings.Builder
			r := remote.New(st, t.TempDir(), &warn)
			r.NoSync = true
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err = tc.run(ctx, r, &warn)
			t.Logf("the user sees: %v", err)
			runtime.ReadMemStats(&after)
			for _, want := range []string{"s3://runs/p/" + tc.key, "100 bytes"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("allocated %d MB reading an object listed at 100 bytes", alloc>>20)
			}
			// What is in flight in the socket buffers when the client
			// hangs up is not read; bound it loosely.
			if sent := h.sent.Load(); sent > 256<<20 {
				t.Errorf("server got %d MB onto the connection before the client gave up", sent>>20)
			}
		})
	}
}

// TestNoCredentialsDoesNotProbeIMDS: with no credentials anywhere, a
// remote command fails saying what to set, and the EC2 instance metadata
// endpoint gets no request (it once got one, from the SDK's default
// credential chain, on every machine: on a laptop a one-second timeout,
// on someone else's cloud host their instance role). Setting
// AWS_EC2_METADATA_DISABLED=false opts in.
func TestNoCredentialsDoesNotProbeIMDS(t *testing.T) {
	var imds atomic.Int64
	md := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		imds.Add(1)
		http.Error(w, "no role", http.StatusNotFound)
	}))
	defer md.Close()
	h := startHostileS3(t, &hostileS3{listed: 1, served: 1, objects: "p/"})
	dir := t.TempDir()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
		"AWS_EC2_METADATA_DISABLED", "AWS_ENDPOINT_URL_S3"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", md.URL)
	t.Setenv("AWS_ENDPOINT_URL", h.srv.URL)
	t.Setenv("AWS_REGION", "us-east-1")
	for _, tc := range []struct {
		env      string // AWS_EC2_METADATA_DISABLED; "-" for unset
		wantIMDS bool
	}{
		{"-", false},
		{"true", false},
		{"false", true},
	} {
		t.Run("AWS_EC2_METADATA_DISABLED="+tc.env, func(t *testing.T) {
			if tc.env == "-" {
				os.Unsetenv("AWS_EC2_METADATA_DISABLED")
			} else {
				t.Setenv("AWS_EC2_METADATA_DISABLED", tc.env)
			}
			imds.Store(0)
			r, err := remote.Open(context.Background(), "s3://runs/p", t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err = r.Pull(ctx)
			if !errors.Is(err, remote.ErrAuth) {
				t.Fatalf("Pull = %v, want ErrAuth", err)
			}
			if !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
				t.Errorf("error %q does not say what to set", err)
			}
			if got := imds.Load() > 0; got != tc.wantIMDS {
				t.Errorf("IMDS got %d requests, want any: %v", imds.Load(), tc.wantIMDS)
			}
			if tc.wantIMDS {
				return
			}
			if !strings.Contains(err.Error(), "AWS_EC2_METADATA_DISABLED=false") {
				t.Errorf("error %q does not say how to use an instance role", err)
			}
		})
	}
}
