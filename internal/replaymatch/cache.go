package replaymatch

import "sync"

// textCache remembers what redaction and the normalisers made of the
// texts a Matcher compared. A replay sends each turn's whole history
// again, so without it every call would normalise every earlier message
// again (quadratic in the session's length: 30 ms a call at 1,000 calls);
// with it each distinct text is normalised once. It holds at most
// maxCacheBytes of texts and starts over past that. Safe for concurrent
// use.
type textCache struct {
	mu    sync.Mutex
	bytes int
	red   map[string]string
	norm  map[string]normEntry
}

type normEntry struct {
	text   string
	counts []nameCount
}

// maxCacheBytes bounds the texts (keys and results) a textCache holds.
const maxCacheBytes = 64 << 20

func newTextCache() *textCache {
	return &textCache{red: map[string]string{}, norm: map[string]normEntry{}}
}

func (c *textCache) redacted(s string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.red[s]
	return r, ok
}

func (c *textCache) putRedacted(s, r string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.make(len(s) + len(r))
	c.red[s] = r
}

func (c *textCache) normalised(s string) (normEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.norm[s]
	return e, ok
}

func (c *textCache) putNormalised(s, n string, counts []nameCount) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.make(len(s) + len(n))
	c.norm[s] = normEntry{text: n, counts: counts}
}

// make makes room for n more bytes (callers hold mu).
func (c *textCache) make(n int) {
	if c.bytes+n > maxCacheBytes {
		clear(c.red)
		clear(c.norm)
		c.bytes = 0
	}
	c.bytes += n
}

// reset forgets everything (the Env changed).
func (c *textCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.red)
	clear(c.norm)
	c.bytes = 0
}
