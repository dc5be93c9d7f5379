package evals

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
)

// The trust model of `--baseline history:BRANCH`.
//
// The history a gate reads is shared (a bucket every CI job pushes to), so
// a report's branch column says only what its writer claimed: any job with
// write access to the bucket, a pull request's included, could push a
// report that says "main". A report sealed by a job that holds the signing
// key (SigningKeyEnv, an ed25519 private key kept as a secret only the
// main branch's jobs get) carries a signature of its report bytes in its
// run row. A reader given the public keys (TrustedKeysEnv, which are not
// secret) takes as a baseline only a report signed by one of them, whose
// signed bytes name the branch asked for; unsigned reports and reports
// whose signature does not verify are skipped with a warning naming them.
// ed25519 rather than an HMAC: the jobs that read baselines (pull
// requests) must be able to verify a signature without being able to
// make one.
const (
	// SigningKeyEnv holds the ed25519 private key that signs the reports
	// this process seals: base64 of its 32-byte seed (or 64-byte key), or
	// a PKCS #8 PEM block (openssl genpkey -algorithm ed25519) or its
	// base64 body.
	SigningKeyEnv = "AGENTCTL_REPORT_KEY"
	// TrustedKeysEnv lists the ed25519 public keys whose signatures make
	// a report a baseline: base64 of 32 bytes, PEM (openssl pkey -pubout)
	// or its base64 body, several separated by commas. Unset, any report is taken,
	// as before signing existed.
	TrustedKeysEnv = "AGENTCTL_REPORT_PUBKEY"
)

// signatureDomain is signed before the report's bytes, so that a
// signature over a report is never one over anything else.
const signatureDomain = "agentctl eval report v1\n"

// Signer signs reports with an ed25519 key.
type Signer struct {
	key ed25519.PrivateKey
	id  string
}

// ParseSigningKey reads a private key as SigningKeyEnv holds it.
func ParseSigningKey(s string) (*Signer, error) {
	s = strings.TrimSpace(s)
	var key ed25519.PrivateKey
	if blk, _ := pem.Decode([]byte(s)); blk != nil {
		k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("evals: %s: %w", SigningKeyEnv, err)
		}
		ek, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("evals: %s: a %T, want an ed25519 key (openssl genpkey -algorithm ed25519)", SigningKeyEnv, k)
		}
		key = ek
	} else {
		b, err := base64.StdEncoding.DecodeString(s)
		if err == nil && len(b) != ed25519.SeedSize && len(b) != ed25519.PrivateKeySize {
			// The body of openssl's PEM: the key in its PKCS #8 wrapping.
			if k, perr := x509.ParsePKCS8PrivateKey(b); perr == nil {
				if ek, ok := k.(ed25519.PrivateKey); ok {
					b = ek
				}
			}
		}
		switch {
		case err != nil:
			return nil, fmt.Errorf("evals: %s: neither PEM nor base64: %w", SigningKeyEnv, err)
		case len(b) == ed25519.SeedSize:
			key = ed25519.NewKeyFromSeed(b)
		case len(b) == ed25519.PrivateKeySize:
			key = ed25519.PrivateKey(b)
		default:
			return nil, fmt.Errorf("evals: %s: %d bytes, want an ed25519 seed of %d or a key of %d", SigningKeyEnv, len(b), ed25519.SeedSize, ed25519.PrivateKeySize)
		}
	}
	return &Signer{key: key, id: keyID(key.Public().(ed25519.PublicKey))}, nil
}

// Public returns the public key, base64, as TrustedKeysEnv takes it.
func (s *Signer) Public() string {
	return base64.StdEncoding.EncodeToString(s.key.Public().(ed25519.PublicKey))
}

// Sign returns the signature of a report's bytes (the report column of
// its run row) as the signature column holds it:
// ed25519:<key id>:<base64 signature>.
func (s *Signer) Sign(report []byte) string {
	sig := ed25519.Sign(s.key, append([]byte(signatureDomain), report...))
	return "ed25519:" + s.id + ":" + base64.StdEncoding.EncodeToString(sig)
}

// keyID names a public key: the first 8 bytes of its SHA-256, hex.
func keyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// TrustedKeys are the public keys a baseline must be signed by.
type TrustedKeys struct {
	keys map[string]ed25519.PublicKey
}

// ParseTrustedKeys reads the public keys as TrustedKeysEnv holds them.
func ParseTrustedKeys(s string) (*TrustedKeys, error) {
	t := &TrustedKeys{keys: map[string]ed25519.PublicKey{}}
	rest := []byte(strings.TrimSpace(s))
	for {
		blk, after := pem.Decode(rest)
		if blk == nil {
			break
		}
		k, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("evals: %s: %w", TrustedKeysEnv, err)
		}
		ek, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("evals: %s: a %T, want an ed25519 public key", TrustedKeysEnv, k)
		}
		t.keys[keyID(ek)] = ek
		rest = after
	}
	for _, f := range strings.Split(string(rest), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(f)
		if err == nil && len(b) != ed25519.PublicKeySize {
			// The body of openssl's PEM: the key in its DER wrapping.
			if k, perr := x509.ParsePKIXPublicKey(b); perr == nil {
				if ek, ok := k.(ed25519.PublicKey); ok {
					b = ek
				}
			}
		}
		if err != nil || len(b) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("evals: %s: %q is not an ed25519 public key (base64 of %d bytes, or of its DER, or PEM)", TrustedKeysEnv, f, ed25519.PublicKeySize)
		}
		t.keys[keyID(b)] = ed25519.PublicKey(b)
	}
	if len(t.keys) == 0 {
		return nil, fmt.Errorf("evals: %s is set but holds no key", TrustedKeysEnv)
	}
	return t, nil
}

// ErrUnsigned and ErrBadSignature say why a report is not trusted.
var (
	// ErrUnsigned: the report carries no signature.
	ErrUnsigned = errors.New("evals: the report is not signed")
	// ErrBadSignature: its signature is not one of a trusted key over
	// its bytes (forged, tampered with, or signed by another key).
	ErrBadSignature = errors.New("evals: the report's signature does not verify with a trusted key")
)

// Verify checks sig (the signature column) over report.
func (t *TrustedKeys) Verify(report []byte, sig string) error {
	if sig == "" {
		return ErrUnsigned
	}
	alg, rest, _ := strings.Cut(sig, ":")
	id, b64, _ := strings.Cut(rest, ":")
	key, ok := t.keys[id]
	if alg != "ed25519" || !ok {
		return ErrBadSignature
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || !ed25519.Verify(key, append([]byte(signatureDomain), report...), raw) {
		return ErrBadSignature
	}
	return nil
}
