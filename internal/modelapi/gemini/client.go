package gemini

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentctl/agentctl/internal/provider"
)

// Config configures the client. The fields mean what they mean in
// provider.OpenAIConfig.
type Config struct {
	// BaseURL is the API root; empty means
	// https://generativelanguage.googleapis.com. A trailing /v1beta is
	// allowed (the API version is added when missing).
	BaseURL string
	// APIKey is sent as x-goog-api-key; KeyEnv is the variable it was
	// read from (named in the hint of a refused key), empty for KeyEnv.
	APIKey     string
	KeyEnv     string
	MaxRetries int
	HTTPClient *http.Client
	Timeout    time.Duration
}

// maxErrorBody bounds what is read of a failed response.
const maxErrorBody = 1 << 20

type client struct {
	base       string // ends in /v1beta
	key        string
	keyEnv     string
	http       *http.Client
	timeout    time.Duration
	maxRetries int
	retryBase  time.Duration
}

var _ provider.Provider = (*client)(nil)

// New returns the provider for the Gemini API: streamGenerateContent with
// SSE, so that an interrupted run keeps the text streamed so far.
func New(cfg Config) (provider.Provider, error) {
	base := strings.TrimSuffix(cmp.Or(cfg.BaseURL, BaseURL), "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("gemini: base_url %q: want an absolute http(s) URL such as %s", cfg.BaseURL, BaseURL)
	}
	if !strings.HasSuffix(base, "/"+APIVersion) {
		base += "/" + APIVersion
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	return &client{base: base, key: cfg.APIKey, keyEnv: cfg.KeyEnv, http: hc, timeout: cfg.Timeout,
		maxRetries: provider.RetriesOf(cfg.MaxRetries), retryBase: 500 * time.Millisecond}, nil
}

func (p *client) Name() string { return Name }

func (p *client) Complete(ctx context.Context, req provider.Request, onText func(string)) (provider.Response, error) {
	body, at, err := build(req)
	if err != nil {
		return provider.Response{}, err
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return provider.Response{}, fmt.Errorf("gemini: encode request: %w", err)
	}
	u := p.base + "/models/" + url.PathEscape(req.Model) + ":" + MethodStream + "?alt=sse"
	return provider.Retry(ctx, p.maxRetries, p.retryBase, req.OnRetry, func() (provider.Response, bool, error) {
		return p.attempt(ctx, u, raw, req.Model, at, onText)
	})
}

// attempt runs one streamed call; streamed reports whether any text
// reached onText.
func (p *client) attempt(ctx context.Context, u string, body []byte, model string, at int, onText func(string)) (provider.Response, bool, error) {
	actx := ctx
	if p.timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return provider.Response{Model: model}, false, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	if p.key != "" {
		hreq.Header.Set("x-goog-api-key", p.key)
	}
	resp, err := p.http.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return provider.Response{Model: model}, false, ctx.Err()
		}
		return provider.Response{Model: model}, false, provider.TransportError(Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		e := ParseError(resp.StatusCode, resp.Header, b)
		e.KeyEnv = p.keyEnv
		return provider.Response{Model: model}, false, e
	}
	var acc accumulator
	streamed := false
	rerr := events(resp.Body, func(data []byte) error {
		var c chunk
		if err := json.Unmarshal(data, &c); err != nil {
			return &provider.Error{Provider: Name, Type: "stream_error", Message: "malformed response chunk: " + err.Error()}
		}
		if c.Error != nil {
			return inStream(c.Error)
		}
		if d := acc.add(&c); d != "" {
			streamed = true
			if onText != nil {
				onText(d)
			}
		}
		return nil
	})
	r := acc.response(model, at)
	if ctx.Err() != nil {
		return r, streamed, ctx.Err()
	}
	if rerr != nil {
		if pe, ok := rerr.(*provider.Error); ok {
			return r, streamed, pe
		}
		return r, streamed, provider.TransportError(Name, rerr)
	}
	if acc.chunks == 0 {
		return r, streamed, &provider.Error{Provider: Name, Type: provider.ErrEmptyStream, Message: "the 200 response carried no GenerateContentResponse: not an answer"}
	}
	return r, streamed, nil
}
