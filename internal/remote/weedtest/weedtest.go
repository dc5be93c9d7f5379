// Package weedtest runs a real S3-compatible server for tests and
// benchmarks: SeaweedFS (`weed server -s3`, built by .ci/run from
// tools/seaweedfs) on loopback ports, with an S3 identity configured so
// that credentials are checked and a wrong key is refused.
//
// The binary is found through $AGENTCTL_WEED_BIN. A test calling Start
// is skipped when the variable is unset on a developer machine, and fails
// when it is unset in CI ($CI set) or set to something that does not
// start, so CI always runs it. Build it once (about 10 minutes) with:
//
//	cd tools/seaweedfs && go build -o /tmp/weed github.com/seaweedfs/seaweedfs/weed
//	export AGENTCTL_WEED_BIN=/tmp/weed
//
// Each Start runs its own server with its own data folder, so objects
// never leak between tests.
package weedtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/remote"
)

// BinEnv names the variable holding the path of the weed binary.
const BinEnv = "AGENTCTL_WEED_BIN"

// The identity the server accepts.
const (
	AccessKey = "agentctl-test-key"
	SecretKey = "agentctl-test-secret-0123456789"
)

// Server is a running SeaweedFS with its S3 gateway.
type Server struct {
	Endpoint string // http://127.0.0.1:PORT
	Dir      string
	log      string
}

// Env returns the variables that point the AWS SDK (and agentctl) at s
// with the accepted identity.
func (s *Server) Env() map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL":      s.Endpoint,
		"AWS_ACCESS_KEY_ID":     AccessKey,
		"AWS_SECRET_ACCESS_KEY": SecretKey,
		"AWS_REGION":            "us-east-1",
		// No shared config or credentials file of the machine's user.
		"AWS_CONFIG_FILE":             os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
		"AWS_EC2_METADATA_DISABLED":   "true",
	}
}

// Setenv sets Env in the test's environment (restored after it).
func (s *Server) Setenv(tb testing.TB) {
	for k, v := range s.Env() {
		tb.Setenv(k, v)
	}
}

// Log returns what the server printed so far (for failure messages).
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.log)
	return string(b)
}

const s3Config = `{"identities":[{"name":"agentctl","credentials":[{"accessKey":%q,"secretKey":%q}],"actions":["Admin","Read","Write","List","Tagging"]}]}`

// Start runs SeaweedFS for the rest of the test (or benchmark) and waits
// until its S3 gateway answers.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := os.Getenv(BinEnv)
	if bin == "" {
		if os.Getenv("CI") != "" {
			tb.Fatalf("$%s is not set: .ci/run builds SeaweedFS from tools/seaweedfs and sets it", BinEnv)
		}
		tb.Skipf("$%s is not set (see remote/weedtest); skipping the test against a real S3 server", BinEnv)
	}
	var lastErr error
	for range 3 { // a port picked free may be taken before weed binds it
		s, err := start(tb, bin)
		if err == nil {
			return s
		}
		lastErr = err
	}
	tb.Fatalf("weedtest: $%s=%s: %v", BinEnv, bin, lastErr)
	return nil
}

// StartProcess runs weed from bin with its data under dir, outside any
// test (script tests call it from a command). Call stop when done.
func StartProcess(bin, dir string) (s *Server, stop func(), err error) {
	for range 3 {
		var sub string
		if sub, err = os.MkdirTemp(dir, "weed-"); err != nil {
			return nil, nil, err
		}
		if s, stop, err = startIn(bin, sub); err == nil {
			return s, stop, nil
		}
	}
	return nil, nil, err
}

func start(tb testing.TB, bin string) (*Server, error) {
	s, stop, err := startIn(bin, tb.TempDir())
	if err != nil {
		return nil, err
	}
	tb.Cleanup(stop)
	return s, nil
}

func startIn(bin, dir string) (*Server, func(), error) {
	ports, err := freePorts(8)
	if err != nil {
		return nil, nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, nil, err
	}
	cfg := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, s3Config, AccessKey, SecretKey), 0o600); err != nil {
		return nil, nil, err
	}
	s := &Server{Endpoint: "http://127.0.0.1:" + strconv.Itoa(ports[6]), Dir: data, log: filepath.Join(dir, "weed.log")}
	logf, err := os.Create(s.log)
	if err != nil {
		return nil, nil, err
	}
	p := func(i int) string { return strconv.Itoa(ports[i]) }
	cmd := exec.Command(bin, "server",
		"-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir="+data,
		"-master.port="+p(0), "-master.port.grpc="+p(1), "-master.telemetry=false",
		"-volume.port="+p(2), "-volume.port.grpc="+p(3),
		"-filer", "-filer.port="+p(4), "-filer.port.grpc="+p(5),
		"-s3", "-s3.port="+p(6), "-s3.port.grpc="+p(7), "-s3.port.iceberg=0", "-s3.port.lance=0",
		"-s3.config="+cfg, "-volume.max=0",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, nil, fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	stop := func() {
		cmd.Process.Kill()
		<-exited
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for {
		// An unsigned request is refused (403) once the gateway is up
		// with its identities loaded; any HTTP answer means it listens.
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusOK {
				return s, stop, nil
			}
		}
		select {
		case err := <-exited:
			return nil, nil, fmt.Errorf("weed exited (%v) before answering:\n%s", err, tail(s.Log()))
		case <-ctx.Done():
			stop()
			return nil, nil, fmt.Errorf("weed did not answer on %s in 90s:\n%s", s.Endpoint, tail(s.Log()))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Bucket creates a bucket on s and returns its URL with prefix
// (s3://name/prefix), waiting until a write to it succeeds: the gateway
// answers before a volume server has registered, and writes fail until
// one has. It sets s's environment (Setenv) for the rest of the test.
func (s *Server) Bucket(tb testing.TB, name, prefix string) string {
	tb.Helper()
	s.Setenv(tb)
	url, err := s.MakeBucket(name, prefix)
	if err != nil {
		tb.Fatal(err)
	}
	return url
}

// Client returns a Store on rawURL of s with the accepted identity,
// reading nothing from the environment.
func (s *Server) Client(rawURL string) (*remote.S3, error) {
	return remote.NewS3Static(rawURL, s.Endpoint, AccessKey, SecretKey)
}

// MakeBucket is Bucket outside a test, leaving the environment alone.
func (s *Server) MakeBucket(name, prefix string) (string, error) {
	url := "s3://" + name + "/" + prefix
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		st, err := s.Client(url)
		if err != nil {
			return "", err
		}
		if last = st.CreateBucket(ctx); last == nil {
			if _, last = st.Put(ctx, ".weedtest-probe", []byte("ok"), remote.Cond{}); last == nil {
				if last = st.Delete(ctx, ".weedtest-probe", remote.Cond{}); last == nil {
					return url, nil
				}
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	return "", fmt.Errorf("weedtest: bucket %s not writable in 90s: %v\n%s", name, last, tail(s.Log()))
}

func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for len(out) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		port := l.Addr().(*net.TCPAddr).Port
		if port+10000 > 65535 {
			continue // weed derives some ports as port+10000
		}
		out = append(out, port)
	}
	return out, nil
}
