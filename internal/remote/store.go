package remote

import (
	"context"
	"errors"
)

// Store is an object store: a bucket seen through a key prefix. Keys are
// relative to the prefix, with slashes. Implementations: S3 (any
// S3-compatible endpoint) and Mem.
//
// All methods may be called concurrently. Cancelling ctx abandons the
// request and returns ctx's error. Implementations retry transient
// failures themselves; an error returned is final. Errors match, with
// errors.Is, one of ErrNotFound, ErrExists, ErrAuth, ErrUnreachable when
// they are one of those.
type Store interface {
	// Put stores body at key. With IfAbsent it fails with ErrExists when
	// key exists already; with IfMatch set, it fails with ErrExists
	// unless key exists with that ETag. It returns the new object's ETag.
	Put(ctx context.Context, key string, body []byte, c Cond) (etag string, err error)
	// Get returns the object at key and its ETag, or ErrNotFound. An
	// object of more than max bytes fails with ErrTooLarge, having read
	// no more than max+1 of them: callers pass the size the listing
	// promised, so a bucket that lists 100 bytes and serves 3 GB costs
	// 101 bytes of memory.
	Get(ctx context.Context, key string, max int64) (body []byte, etag string, err error)
	// List returns every object whose key starts with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]Object, error)
	// Delete removes key; removing a key that does not exist is not an
	// error. With IfMatch set, it removes key only if it has that ETag,
	// and fails with ErrExists otherwise.
	Delete(ctx context.Context, key string, c Cond) error
	// String names the store for messages: s3://bucket/prefix.
	String() string
}

// Cond makes a Put or Delete conditional.
type Cond struct {
	IfAbsent bool   // If-None-Match: *
	IfMatch  string // If-Match: <etag>
}

// Object is one listed object.
type Object struct {
	Key  string // relative to the prefix
	ETag string // as the store reports it, quotes removed
	Size int64
}

// Errors of a Store and of this package. Match them with errors.Is.
var (
	// ErrNotFound means the key does not exist.
	ErrNotFound = errors.New("remote: object not found")
	// ErrExists means a conditional write or delete found the key taken
	// or changed (HTTP 412 Precondition Failed).
	ErrExists = errors.New("remote: precondition failed: the object exists or changed")
	// ErrNoBucket means the URL's bucket does not exist on the store.
	ErrNoBucket = errors.New("remote: no such bucket")
	// ErrAuth means the store refused the credentials or the request.
	ErrAuth = errors.New("remote: access denied")
	// ErrUnreachable means the endpoint could not be reached.
	ErrUnreachable = errors.New("remote: endpoint unreachable")
	// ErrTooLarge means an object is larger than this agentctl reads, or
	// than the listing that named it said (the bucket is not trusted).
	ErrTooLarge = errors.New("remote: object too large")
	// ErrLeaseHeld means another compaction holds the lease.
	ErrLeaseHeld = errors.New("remote: compaction lease held by another process")
	// ErrLeaseLost means the lease expired and was taken over while this
	// process held it; nothing was deleted.
	ErrLeaseLost = errors.New("remote: compaction lease lost")
)
