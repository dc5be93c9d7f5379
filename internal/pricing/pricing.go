// Package pricing is the price table behind every cost agentctl reports:
// a live call's, a budget's reservation, an imported transcript's. It is a
// leaf apart from the provider clients so that what only prices tokens (the
// spec, the transcript importers) does not link the vendor SDKs.
package pricing

import "strings"

// Price is a list price in USD per million tokens, one rate per part of a
// bill: uncached input, cache reads, cache writes (five-minute and
// one-hour lifetimes) and output.
type Price struct{ Input, Output, CacheRead, CacheWrite, CacheWrite1h float64 }

// anthropicPrice is Anthropic's rule: cache reads cost a tenth of the
// input rate, five-minute cache writes 1.25 times it, one-hour writes twice.
func anthropicPrice(in, out float64) Price {
	return Price{Input: in, Output: out, CacheRead: in * 0.1, CacheWrite: in * 1.25, CacheWrite1h: in * 2}
}

// openAIPrice is OpenAI's rule: cached input has its own (lower) rate and
// writing the cache costs nothing extra.
func openAIPrice(in, out, cached float64) Price {
	return Price{Input: in, Output: out, CacheRead: cached, CacheWrite: in, CacheWrite1h: in}
}

// geminiPrice is Gemini's rule: cached input (context caching, implicit
// or explicit) has its own rate and no write charge per token (storage is
// billed per hour, outside any one call).
func geminiPrice(in, out, cached float64) Price {
	return Price{Input: in, Output: out, CacheRead: cached, CacheWrite: in, CacheWrite1h: in}
}

// prices holds list prices (USD per 1M tokens, standard tier, no batch
// discount) of well-known models, keyed by model-id prefix so that dated
// ids ("gpt-4o-2024-08-06", "claude-3-7-sonnet-20250219") and "-latest"
// aliases find their family. The longest matching prefix wins, so
// "gpt-4o-mini" is not priced as "gpt-4o". Prices change; the table is an
// estimate for budgets and reports, not a bill. Unknown models (local
// servers, new releases) cost 0.
var prices = map[string]Price{
	"gpt-4o":       openAIPrice(2.50, 10.00, 1.25),
	"gpt-4o-mini":  openAIPrice(0.15, 0.60, 0.075),
	"gpt-4.1":      openAIPrice(2.00, 8.00, 0.50),
	"gpt-4.1-mini": openAIPrice(0.40, 1.60, 0.10),
	"gpt-4.1-nano": openAIPrice(0.10, 0.40, 0.025),
	"gpt-5":        openAIPrice(1.25, 10.00, 0.125),
	"gpt-5-mini":   openAIPrice(0.25, 2.00, 0.025),
	"gpt-5-nano":   openAIPrice(0.05, 0.40, 0.005),
	"o3":           openAIPrice(2.00, 8.00, 0.50),
	"o3-mini":      openAIPrice(1.10, 4.40, 0.55),
	"o4-mini":      openAIPrice(1.10, 4.40, 0.275),

	"claude-3-haiku":    anthropicPrice(0.25, 1.25),
	"claude-3-5-haiku":  anthropicPrice(0.80, 4.00),
	"claude-haiku-4-5":  anthropicPrice(1.00, 5.00),
	"claude-3-5-sonnet": anthropicPrice(3.00, 15.00),
	"claude-3-7-sonnet": anthropicPrice(3.00, 15.00),
	"claude-sonnet-4":   anthropicPrice(3.00, 15.00),
	"claude-3-opus":     anthropicPrice(15.00, 75.00),
	"claude-opus-4":     anthropicPrice(15.00, 75.00),
	"claude-opus-4-5":   anthropicPrice(5.00, 25.00),
	"claude-opus-4-6":   anthropicPrice(5.00, 25.00),

	// https://ai.google.dev/gemini-api/docs/pricing (paid tier, text
	// input, prompts up to 200k tokens; 2.5 Pro's dearer rate above that
	// is not modelled). Thinking tokens are billed as output.
	"gemini-2.5-pro":        geminiPrice(1.25, 10.00, 0.125),
	"gemini-2.5-flash":      geminiPrice(0.30, 2.50, 0.03),
	"gemini-2.5-flash-lite": geminiPrice(0.10, 0.40, 0.01),
}

// Usage is what one call is billed for. Input counts every input token the
// provider bills, cache reads and writes included (Anthropic reports those
// apart from input_tokens; OpenAI's prompt_tokens already holds its cached
// tokens); CacheRead and CacheCreation say how many of them were read from
// or written to the prompt cache, and CacheCreation1h how many of the
// writes were at the one-hour lifetime.
type Usage struct {
	Input, CacheRead, CacheCreation, CacheCreation1h, Output int64
}

// Cost estimates the USD cost of a call without cache use: 0 when the model
// is not in the table.
func Cost(model string, in, out int64) float64 {
	return CostOf(model, Usage{Input: in, Output: out})
}

// CostOf estimates the USD cost of a call, each part at its own rate:
// uncached input, cache reads, cache writes and output. 0 when the model is
// not in the table.
func CostOf(model string, u Usage) float64 {
	p, ok := PriceOf(model)
	if !ok {
		return 0
	}
	return p.Cost(u)
}

// PriceOf is the list price of model from the table (the longest matching
// id prefix), false when the table has none: a local server's model, a
// scripted one, a release newer than this agentctl. A cost budget needs a
// price to reserve against, so the runner refuses one for such a model
// unless the spec gives its price.
func PriceOf(model string) (Price, bool) {
	best := ""
	for prefix := range prices {
		if strings.HasPrefix(model, prefix) && len(prefix) > len(best) {
			best = prefix
		}
	}
	if best == "" {
		return Price{}, false
	}
	return prices[best], true
}

// Cost is the USD cost of usage u at p, each part at its own rate.
func (p Price) Cost(u Usage) float64 {
	write1h := min(max(u.CacheCreation1h, 0), max(u.CacheCreation, 0))
	write5m := max(u.CacheCreation, 0) - write1h
	read := max(u.CacheRead, 0)
	plain := max(u.Input-read-write5m-write1h, 0)
	return (float64(plain)*p.Input + float64(read)*p.CacheRead + float64(write5m)*p.CacheWrite +
		float64(write1h)*p.CacheWrite1h + float64(u.Output)*p.Output) / 1e6
}
