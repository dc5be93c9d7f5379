package provider

import "strings"

// price is a list price in USD per million tokens.
type price struct{ in, out float64 }

// prices holds list prices (USD per 1M input/output tokens, standard tier,
// no caching or batch discount) of well-known models, keyed by model-id
// prefix so that dated ids ("gpt-4o-2024-08-06",
// "claude-3-7-sonnet-20250219") and "-latest" aliases find their family.
// The longest matching prefix wins, so "gpt-4o-mini" is not priced as
// "gpt-4o". Prices change; the table is an estimate for budgets and
// reports, not a bill. Unknown models (local servers, new releases) cost 0.
var prices = map[string]price{
	"gpt-4o":       {2.50, 10.00},
	"gpt-4o-mini":  {0.15, 0.60},
	"gpt-4.1":      {2.00, 8.00},
	"gpt-4.1-mini": {0.40, 1.60},
	"gpt-4.1-nano": {0.10, 0.40},
	"gpt-5":        {1.25, 10.00},
	"gpt-5-mini":   {0.25, 2.00},
	"gpt-5-nano":   {0.05, 0.40},
	"o3":           {2.00, 8.00},
	"o3-mini":      {1.10, 4.40},
	"o4-mini":      {1.10, 4.40},

	"claude-3-haiku":    {0.25, 1.25},
	"claude-3-5-haiku":  {0.80, 4.00},
	"claude-haiku-4-5":  {1.00, 5.00},
	"claude-3-5-sonnet": {3.00, 15.00},
	"claude-3-7-sonnet": {3.00, 15.00},
	"claude-sonnet-4":   {3.00, 15.00},
	"claude-3-opus":     {15.00, 75.00},
	"claude-opus-4":     {15.00, 75.00},
	"claude-opus-4-5":   {5.00, 25.00},
}

// Cost estimates the USD cost of one call from the price table: 0 when the
// model is not in it.
func Cost(model string, in, out int64) float64 {
	best := ""
	for prefix := range prices {
		if strings.HasPrefix(model, prefix) && len(prefix) > len(best) {
			best = prefix
		}
	}
	if best == "" {
		return 0
	}
	p := prices[best]
	return (float64(in)*p.in + float64(out)*p.out) / 1e6
}
