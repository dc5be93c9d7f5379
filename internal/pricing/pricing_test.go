package pricing

import (
	"math"
	"testing"
)

func TestCost(t *testing.T) {
	tests := []struct {
		model   string
		in, out int64
		want    float64
	}{
		{"gpt-4o-2024-08-06", 1_000_000, 1_000_000, 12.50},
		{"gpt-4o-mini-2024-07-18", 1_000_000, 0, 0.15},
		{"claude-3-7-sonnet-20250219", 1_000_000, 1_000_000, 18},
		{"claude-opus-4-5-20251101", 1_000_000, 0, 5},
		{"claude-opus-4-1-20250805", 1_000_000, 0, 15},
		{"llama3.1:8b", 1_000_000, 1_000_000, 0},
	}
	for _, tt := range tests {
		if got := Cost(tt.model, tt.in, tt.out); got < tt.want-1e-9 || got > tt.want+1e-9 {
			t.Errorf("Cost(%q, %d, %d) = %v, want %v", tt.model, tt.in, tt.out, got, tt.want)
		}
	}
}

func TestCostOfParts(t *testing.T) {
	tests := []struct {
		model string
		u     Usage
		want  float64
	}{
		{"claude-sonnet-4-5", Usage{Input: 1_000_000}, 3},
		{"claude-sonnet-4-5", Usage{Input: 1_000_000, CacheRead: 1_000_000}, 0.30},
		{"claude-sonnet-4-5", Usage{Input: 1_000_000, CacheCreation: 1_000_000}, 3.75},
		{"claude-sonnet-4-5", Usage{Input: 1_000_000, CacheCreation: 1_000_000, CacheCreation1h: 1_000_000}, 6},
		{"claude-sonnet-4-5", Usage{Input: 3_000_000, CacheRead: 1_000_000, CacheCreation: 1_000_000, Output: 1_000_000}, 3 + 0.30 + 3.75 + 15},
		{"gpt-4o-2024-08-06", Usage{Input: 2_000_000, CacheRead: 1_000_000}, 2.50 + 1.25},
		{"gpt-4.1-mini", Usage{Input: 1_000_000, CacheRead: 1_000_000}, 0.10},
		{"llama3.1:8b", Usage{Input: 1_000_000, CacheRead: 1_000_000}, 0},
		{"gemini-2.5-flash", Usage{Input: 2_000_000, CacheRead: 1_000_000, Output: 1_000_000}, 0.30 + 0.03 + 2.50},
		{"gemini-2.5-flash-lite", Usage{Input: 1_000_000, Output: 1_000_000}, 0.10 + 0.40},
		{"gemini-2.5-pro", Usage{Input: 1_000_000, CacheRead: 1_000_000, Output: 1_000_000}, 0.125 + 10},
	}
	for _, tt := range tests {
		if got := CostOf(tt.model, tt.u); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("CostOf(%q, %+v) = %v, want %v", tt.model, tt.u, got, tt.want)
		}
	}
}
