package tools

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestCapBuffer(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, max := range []int{2, 3, 10, 101} {
		for _, size := range []int{0, 1, max - 1, max, max + 1, 3 * max, 10*max + 7} {
			data := make([]byte, size)
			for i := range data {
				data[i] = 'a' + byte(i%26)
			}
			want, wantTrunc := string(data), false
			if size > max {
				h := max / 2
				tail := max - h
				want = fmt.Sprintf("%s\n[... %d bytes elided ...]\n%s", data[:h], size-max, data[size-tail:])
				wantTrunc = true
			}
			// The same bytes in one write and in random chunks.
			for round := 0; round < 5; round++ {
				b := newCapBuffer(max)
				rest := data
				for len(rest) > 0 {
					n := len(rest)
					if round > 0 {
						n = 1 + rng.IntN(len(rest))
					}
					b.Write(rest[:n])
					rest = rest[n:]
				}
				got, trunc := b.Result()
				if got != want || trunc != wantTrunc {
					t.Fatalf("max %d, %d bytes, round %d: Result() = %q, %v; want %q, %v", max, size, round, got, trunc, want, wantTrunc)
				}
			}
		}
	}
	b := newCapBuffer(0) // raised to 2
	b.Write([]byte("abcd"))
	if got, trunc := b.Result(); got != "a\n[... 2 bytes elided ...]\nd" || !trunc {
		t.Errorf("newCapBuffer(0) after 4 bytes: Result() = %q, %v", got, trunc)
	}
}
