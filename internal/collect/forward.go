package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ForwardConfig says where a Forwarder sends and how much it may hold.
type ForwardConfig struct {
	// URL is the other collector's OTLP/HTTP base, as
	// OTEL_EXPORTER_OTLP_ENDPOINT names one (http://host:4318): exports go
	// to URL/v1/traces and URL/v1/logs.
	URL string
	// Headers are sent with every forwarded export (the other
	// collector's own token).
	Headers http.Header
	// MaxQueueBytes bounds the exports waiting; beyond it new ones are
	// dropped (and counted). Default 64 MiB.
	MaxQueueBytes int64
	// Workers send in parallel. Default 2.
	Workers int
	// Timeout bounds one send. Default 10 s.
	Timeout time.Duration
	// Logf is told when the target goes down and comes back.
	Logf func(format string, args ...any)
}

// Forwarder sends a copy of each accepted export to another collector,
// asynchronously: Enqueue never blocks, a full queue drops (counted), a
// failed send is retried twice when the answer says it may be, then
// dropped (counted). Sends are at most once per export; order between
// workers is not kept (OTLP does not need it).
type Forwarder struct {
	cfg    ForwardConfig
	base   string // where exports go, credentials and all
	shown  string // base as every message and Stats name it: no password
	client *http.Client
	q      chan fwdItem
	queued atomic.Int64
	closed atomic.Bool
	mu     sync.Mutex // orders Enqueue against Close's close(q)
	wg     sync.WaitGroup
	stop   chan struct{}

	sent, dropped, failed atomic.Int64
	down                  atomic.Bool
}

type fwdItem struct {
	g           signal
	contentType string
	encoding    string
	body        []byte
}

// ForwardStats are a Forwarder's counts.
type ForwardStats struct {
	URL     string `json:"url"`
	Sent    int64  `json:"sent"`
	Dropped int64  `json:"dropped"` // queue full, or closed before sent
	Failed  int64  `json:"failed"`  // the target refused or was unreachable
	Queued  int64  `json:"queued_bytes"`
}

// NewForwarder checks cfg and starts the workers; Close stops them.
func NewForwarder(cfg ForwardConfig) (*Forwarder, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		shown := "the forward URL"
		if err == nil {
			shown = fmt.Sprintf("forward URL %q", u.Redacted())
		}
		return nil, fmt.Errorf("collect: %s: want http://HOST:PORT or https://HOST:PORT, an OTLP/HTTP collector's base", shown)
	}
	if cfg.MaxQueueBytes <= 0 {
		cfg.MaxQueueBytes = 64 << 20
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	f := &Forwarder{cfg: cfg, base: strings.TrimRight(cfg.URL, "/"), shown: strings.TrimRight(u.Redacted(), "/"),
		q: make(chan fwdItem, 4096), stop: make(chan struct{})}
	// A redirect to another host would send the exports (and the
	// URL's credentials, the configured headers) somewhere not asked for.
	f.client = &http.Client{Timeout: cfg.Timeout, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Host != u.Host || req.URL.Scheme != u.Scheme {
			return fmt.Errorf("refused a redirect to another host, %s://%s: forward to it directly if it is the collector meant", req.URL.Scheme, req.URL.Host)
		}
		if len(via) >= 3 {
			return errors.New("stopped after 3 redirects")
		}
		return nil
	}}
	for range cfg.Workers {
		f.wg.Add(1)
		go f.work()
	}
	return f, nil
}

// Enqueue queues one export, body as received, and reports whether it
// was queued. It keeps body: the caller must not change it.
func (f *Forwarder) Enqueue(g signal, contentType, encoding string, body []byte) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := int64(len(body))
	if f.closed.Load() || f.queued.Load()+n > f.cfg.MaxQueueBytes {
		f.dropped.Add(1)
		return false
	}
	select {
	case f.q <- fwdItem{g, contentType, encoding, body}:
		f.queued.Add(n)
		return true
	default:
		f.dropped.Add(1)
		return false
	}
}

// Close stops taking exports, sends what is queued until ctx is done,
// then drops the rest (counted).
func (f *Forwarder) Close(ctx context.Context) error {
	f.mu.Lock()
	if f.closed.Swap(true) {
		f.mu.Unlock()
		return nil
	}
	close(f.q)
	f.mu.Unlock()
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		close(f.stop)
		<-done
		return fmt.Errorf("collect: forward to %s: %d bytes of exports not sent before the deadline", f.shown, f.queued.Load())
	}
}

// Stats returns the counts so far.
func (f *Forwarder) Stats() ForwardStats {
	return ForwardStats{URL: f.shown, Sent: f.sent.Load(), Dropped: f.dropped.Load(), Failed: f.failed.Load(), Queued: f.queued.Load()}
}

func (f *Forwarder) work() {
	defer f.wg.Done()
	for it := range f.q {
		f.queued.Add(-int64(len(it.body)))
		select {
		case <-f.stop:
			f.dropped.Add(1)
			continue
		default:
		}
		err := f.send(it)
		if err == nil {
			f.sent.Add(1)
			if f.down.Swap(false) {
				f.cfg.Logf("agentctl collect: forward to %s works again", f.shown)
			}
			continue
		}
		f.failed.Add(1)
		if !f.down.Swap(true) {
			f.cfg.Logf("agentctl collect: forward to %s failing, its exports are dropped until it answers (what is collected here is kept): %v", f.shown, redactURLs(err, f.base, f.shown))
		}
	}
}

// redactURLs is err's text with the forward URL as shown: an error of the
// HTTP client names the URL it asked (net/http masks the password, but
// not in every path, and the text is what the log keeps).
func redactURLs(err error, base, shown string) string {
	if base == shown {
		return err.Error()
	}
	return strings.ReplaceAll(err.Error(), base, shown)
}

// errRetryable marks a send the target may take later.
var errRetryable = errors.New("retryable")

func (f *Forwarder) send(it fwdItem) error {
	var err error
	for attempt := range 3 {
		if attempt > 0 {
			select {
			case <-f.stop:
				return err
			case <-time.After(time.Duration(attempt*attempt) * 200 * time.Millisecond):
			}
		}
		err = f.post(it)
		if err == nil || !errors.Is(err, errRetryable) {
			return err
		}
	}
	return err
}

func (f *Forwarder) post(it fwdItem) error {
	req, err := http.NewRequest(http.MethodPost, f.base+it.g.path(), bytes.NewReader(it.body))
	if err != nil {
		return err
	}
	for k, v := range f.cfg.Headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", it.contentType)
	if it.encoding != "" && it.encoding != "identity" {
		req.Header.Set("Content-Encoding", it.encoding)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", errRetryable, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode/100 == 2:
		return nil
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusBadGateway,
		resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
		return fmt.Errorf("%w: POST %s: %s", errRetryable, it.g.path(), resp.Status)
	}
	return fmt.Errorf("POST %s: %s", it.g.path(), resp.Status)
}
