package evals_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/agentctl/agentctl/internal/evals"
	"github.com/agentctl/agentctl/internal/history"
	"github.com/agentctl/agentctl/internal/query"
)

func signer(t *testing.T, seed byte) *evals.Signer {
	t.Helper()
	s, err := evals.ParseSigningKey(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{seed}, ed25519.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// With trusted keys, history:BRANCH takes the newest report of the branch
// whose signature verifies: a newer unsigned report that says "main"
// (anyone who can push to the history), one signed by another key, a
// signed one whose bytes were changed (its digest recomputed), and a
// signed report of another branch whose row claims main are each skipped
// with a warning naming them.
func TestBaselineSigned(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	h := history.New(home)
	mainKey, otherKey := signer(t, 1), signer(t, 2)
	trusted, err := evals.ParseTrustedKeys(mainKey.Public())
	if err != nil {
		t.Fatal(err)
	}
	seal := func(day int, branch string, s *evals.Signer, edit func(rows []history.EvalRow)) string {
		rep := report("smoke", day, 2, 2)
		rep.Branch = branch
		rows, err := evals.HistoryRows(rep, s)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(rows)
		}
		if _, err := h.SealEval(rows); err != nil {
			t.Fatal(err)
		}
		return rows[0].ReportDigest[:16]
	}
	seal(1, "main", mainKey, nil) // the genuine baseline
	forged := seal(2, "main", nil, nil)
	other := seal(3, "main", otherKey, nil)
	tampered := seal(4, "main", mainKey, func(rows []history.EvalRow) {
		// Every run failed, says the changed report; its digest and file
		// name follow the new bytes, its signature is the old one.
		text := strings.ReplaceAll(rows[0].Report, `"ok":true`, `"ok":false`)
		sum := sha256.Sum256([]byte(text))
		for i := range rows {
			rows[i].ReportDigest = hex.EncodeToString(sum[:])
		}
		rows[0].Report = text
	})
	relabelled := seal(5, "feature", mainKey, func(rows []history.EvalRow) {
		for i := range rows {
			rows[i].Branch = "main"
		}
	})
	db, err := query.Open(ctx, home, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	// Unprotected (no keys): the newest report that says main, the forgery.
	got, err := evals.BaselineFromHistory(ctx, evals.HistorySource{DB: db, Suite: "smoke"}, "main")
	if err != nil || got.Started.Day() != 5 {
		t.Fatalf("without keys: baseline = %v, %v; want day 5's", got, err)
	}
	var warn bytes.Buffer
	got, err = evals.BaselineFromHistory(ctx, evals.HistorySource{DB: db, Suite: "smoke", Trusted: trusted, Warn: &warn}, "main")
	if err != nil || got.Started.Day() != 1 || got.Branch != "main" {
		t.Fatalf("with keys: baseline = %v, %v; want day 1's, the signed one", got, err)
	}
	for _, want := range []string{
		"skipping report " + forged + " (started 2026-01-02T12:00:00Z): it is not signed",
		"skipping report " + other + " (started 2026-01-03T12:00:00Z): its signature does not verify",
		"skipping report " + tampered + " (started 2026-01-04T12:00:00Z): its signature does not verify",
		"skipping report " + relabelled + " (started 2026-01-05T12:00:00Z): its row claims what its signed report does not",
	} {
		if !strings.Contains(warn.String(), want) {
			t.Errorf("warnings do not say %q:\n%s", want, warn.String())
		}
	}
	// No trusted report at all: no baseline, said so.
	onlyOther, _ := evals.ParseTrustedKeys(otherKey.Public() + ", " + base64.StdEncoding.EncodeToString(make([]byte, 32)))
	if _, err := evals.BaselineFromHistory(ctx, evals.HistorySource{DB: db, Suite: "smoke", Trusted: onlyOther}, "feature"); !errors.Is(err, evals.ErrNoBaseline) ||
		!strings.Contains(err.Error(), "no complete signed report") {
		t.Errorf("feature with another key = %v, want no signed baseline", err)
	}
}

func TestParseKeys(t *testing.T) {
	for _, bad := range []string{"", "not base64!", base64.StdEncoding.EncodeToString(make([]byte, 31))} {
		if _, err := evals.ParseSigningKey(bad); err == nil {
			t.Errorf("ParseSigningKey(%q) = nil error", bad)
		}
		if _, err := evals.ParseTrustedKeys(bad); err == nil {
			t.Errorf("ParseTrustedKeys(%q) = nil error", bad)
		}
	}
	// openssl genpkey -algorithm ed25519; openssl pkey -pubout
	const priv = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEB\n-----END PRIVATE KEY-----\n"
	s, err := evals.ParseSigningKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	if s.Public() != signer(t, 1).Public() {
		t.Errorf("PEM key's public = %s, want the seed's", s.Public())
	}
	// The PEM bodies alone, one line each, as an environment variable
	// holds them best.
	body := strings.Split(priv, "\n")[1]
	if s2, err := evals.ParseSigningKey(body); err != nil || s2.Public() != s.Public() {
		t.Errorf("ParseSigningKey(PEM body) = %v, %v", s2, err)
	}
	for _, pk := range []string{s.Public(), spki(t, s.Public())} {
		tk, err := evals.ParseTrustedKeys(pk)
		if err != nil {
			t.Fatalf("ParseTrustedKeys(%s) = %v", pk, err)
		}
		if err := tk.Verify([]byte("r"), s.Sign([]byte("r"))); err != nil {
			t.Errorf("Verify with %s = %v", pk, err)
		}
	}
}

func mustB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// spki is the base64 DER a PEM public key holds (openssl pkey -pubout).
func spki(t *testing.T, pub string) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(ed25519.PublicKey(mustB64(t, pub)))
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(der)
}
