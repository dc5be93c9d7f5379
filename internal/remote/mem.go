package remote

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Mem is a Store in memory, with the conditional semantics of S3. Tests
// use it where the behaviour under test is not the wire; the conformance
// suite (remotetest.Run) holds it and S3 to the same contract.
type Mem struct {
	Name string // for String; "mem" if empty

	mu   sync.Mutex
	objs map[string]memObject
}

type memObject struct {
	body []byte
	etag string
}

var _ Store = (*Mem)(nil)

func (m *Mem) String() string {
	if m.Name == "" {
		return "mem"
	}
	return m.Name
}

func (m *Mem) Put(ctx context.Context, key string, body []byte, c Cond) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.objs == nil {
		m.objs = map[string]memObject{}
	}
	old, ok := m.objs[key]
	if (c.IfAbsent && ok) || (c.IfMatch != "" && (!ok || old.etag != c.IfMatch)) {
		return "", fmt.Errorf("put %s/%s: %w", m, key, ErrExists)
	}
	sum := md5.Sum(body)
	o := memObject{body: slices.Clone(body), etag: hex.EncodeToString(sum[:])}
	m.objs[key] = o
	return o.etag, nil
}

func (m *Mem) Get(ctx context.Context, key string, max int64) ([]byte, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[key]
	if !ok {
		return nil, "", fmt.Errorf("get %s/%s: %w", m, key, ErrNotFound)
	}
	if int64(len(o.body)) > max {
		return nil, "", tooLarge(m, key, max)
	}
	return slices.Clone(o.body), o.etag, nil
}

func (m *Mem) List(ctx context.Context, prefix string) ([]Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Object
	for k, o := range m.objs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, Object{Key: k, ETag: o.etag, Size: int64(len(o.body))})
		}
	}
	slices.SortFunc(out, func(a, b Object) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

func (m *Mem) Delete(ctx context.Context, key string, c Cond) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.objs[key]; c.IfMatch != "" && (!ok || o.etag != c.IfMatch) {
		return fmt.Errorf("delete %s/%s: %w", m, key, ErrExists)
	}
	delete(m.objs, key)
	return nil
}
