package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// lease is the compaction lease object: who holds it, until when. It is
// created with If-None-Match and replaced only with If-Match, so two
// processes can never both believe they hold it.
type lease struct {
	Owner   string    `json:"owner"`
	Expires time.Time `json:"expires"`
	etag    string
}

// maxLeaseBytes bounds the read of a lease: this package writes a few
// dozen bytes.
const maxLeaseBytes = 64 << 10

// acquireLease takes the compaction lease for ttl, taking over one that
// expired. It fails with ErrLeaseHeld naming the holder otherwise.
func (r *Remote) acquireLease(ctx context.Context, owner string, ttl time.Duration, now func() time.Time) (*lease, error) {
	l := &lease{Owner: owner, Expires: now().Add(ttl).UTC()}
	b, _ := json.Marshal(l)
	etag, err := r.Store.Put(ctx, leaseKey, b, Cond{IfAbsent: true})
	if err == nil {
		l.etag = etag
		return l, nil
	}
	if !errors.Is(err, ErrExists) {
		return nil, fmt.Errorf("remote: take compaction lease: %w", err)
	}
	cur, curTag, err := r.Store.Get(ctx, leaseKey, maxLeaseBytes)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%w: released while this one tried to take it; run it again", ErrLeaseHeld)
	}
	if err != nil {
		return nil, fmt.Errorf("remote: take compaction lease: %w", err)
	}
	var held lease
	if json.Unmarshal(cur, &held) == nil && now().Before(held.Expires) {
		return nil, fmt.Errorf("%w: %s holds %s/%s until %s; run it again after that", ErrLeaseHeld, held.Owner, r.Store, leaseKey, held.Expires.Format(time.RFC3339))
	}
	// Expired (its holder died) or unreadable: take it over, if nobody
	// else did since we read it.
	etag, err = r.Store.Put(ctx, leaseKey, b, Cond{IfMatch: curTag})
	if errors.Is(err, ErrExists) {
		return nil, fmt.Errorf("%w: taken over by another process just now", ErrLeaseHeld)
	}
	if err != nil {
		return nil, fmt.Errorf("remote: take compaction lease: %w", err)
	}
	l.etag = etag
	return l, nil
}

// renew extends l by ttl if it is still ours; ErrLeaseLost if not.
func (r *Remote) renew(ctx context.Context, l *lease, ttl time.Duration, now func() time.Time) error {
	if !now().Before(l.Expires) {
		return fmt.Errorf("%w: it expired at %s before the compaction finished; nothing was deleted, run it again (with a longer --lease)", ErrLeaseLost, l.Expires.Format(time.RFC3339))
	}
	n := &lease{Owner: l.Owner, Expires: now().Add(ttl).UTC()}
	b, _ := json.Marshal(n)
	etag, err := r.Store.Put(ctx, leaseKey, b, Cond{IfMatch: l.etag})
	if errors.Is(err, ErrExists) {
		return fmt.Errorf("%w: another process took it over; nothing was deleted", ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("remote: renew compaction lease: %w", err)
	}
	l.Expires, l.etag = n.Expires, etag
	return nil
}

// release gives l up, if it is still ours.
func (r *Remote) release(ctx context.Context, l *lease) error {
	err := r.Store.Delete(ctx, leaseKey, Cond{IfMatch: l.etag})
	if err != nil && !errors.Is(err, ErrExists) && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("remote: release compaction lease: %w", err)
	}
	return nil
}

func defaultOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s pid %d", host, os.Getpid())
}
