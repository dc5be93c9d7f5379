package cli

import (
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		in   string
		want time.Time
		err  bool
	}{
		{in: "24h", want: now.Add(-24 * time.Hour)},
		{in: "90m", want: now.Add(-90 * time.Minute)},
		{in: "7d", want: now.AddDate(0, 0, -7)},
		{in: "1d12h", want: now.Add(-36 * time.Hour)},
		{in: "2026-12-01", want: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		{in: "2026-12-01T09:30:00Z", want: time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)},
		{in: "2026-12-01T09:30:00+02:00", want: time.Date(2026, 12, 1, 7, 30, 0, 0, time.UTC)},
		{in: "yesterday", err: true},
		{in: "-5h", err: true},
		{in: "d", err: true},
		{in: "7dx", err: true},
		{in: "", err: true},
	} {
		got, err := parseSince(tt.in, now)
		if (err != nil) != tt.err || !tt.err && !got.Equal(tt.want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v (error %t)", tt.in, got, err, tt.want, tt.err)
		}
	}
}
