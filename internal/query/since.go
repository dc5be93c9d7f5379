package query

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseSince reads a "since" bound as `agentctl sessions --since` and the
// MCP server's list_sessions take it: a duration back from now (Go's, plus
// days: 7d, 1d12h), a date (midnight UTC), or an RFC 3339 time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if d, err := parseAgo(s); err == nil {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q is neither a duration (90m, 24h, 7d) nor a date (2026-12-01) nor an RFC 3339 time (2026-12-01T09:00:00Z)", s)
}

// parseAgo reads a non-negative duration, with d for days before the rest
// (7d, 1d12h).
func parseAgo(s string) (time.Duration, error) {
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil || n < 0 || n > 100000 {
			return 0, fmt.Errorf("bad days in %q", s)
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad duration %q", s)
	}
	return days + d, nil
}
