// Package genai names the OpenTelemetry GenAI attributes agentctl reads
// (collect, import otlp) and writes (trace, export otlp, live export)
// that Go's semconv/v1.41.0 does not define: the conventions left the
// semantic-conventions repository after v1.41.1 for
// semantic-conventions-genai, which renamed some and added others while
// instrumentations still send the released names, some both.
//
// The released names (v1.37 to v1.41) stay with semconv/v1.41.0, which
// the exporter uses; the names here are the newer ones, each with the
// change that introduced it, so moving to a released Go package later is
// one change. Readers try the newer name first: a span that carries both
// is read as the newer convention says.
//
// What moved, by the corpus copies (testdata/corpus/semconv): at the
// genai repository's 2026-05-11 snapshot its registry defines the same 51
// attributes as v1.41.1 (operation name gains plan), its events the same
// three (operation.details now refers to the inference span's attributes
// instead of extending them), its spans the same attributes per span under
// new type ids (gen_ai.inference.client, not span.gen_ai.inference.client)
// plus gen_ai.plan.internal. The renames and additions that touch what
// agentctl records came after that snapshot; they are listed here.
package genai

// Attributes of semantic-conventions-genai that are not in v1.41.1.
const (
	// CacheWriteInputTokens is the input tokens written to a provider's
	// prompt cache: the rename of gen_ai.usage.cache_creation.input_tokens
	// (semantic-conventions-genai PR #440).
	CacheWriteInputTokens = "gen_ai.usage.cache_write.input_tokens"
	// ConversationCompacted is a boolean on an inference span whose input
	// is a compacted view of the conversation (PR #162); set only to true,
	// never false: its absence says nothing.
	ConversationCompacted = "gen_ai.conversation.compacted"
)

// Source is where a name outside v1.41.1 comes from.
type Source struct {
	Name string
	// Change is the semantic-conventions-genai pull request that added it.
	Change string
	// Replaces is the released name it renames, if any.
	Replaces string
}

// AfterV141 lists every name of this package: the names agentctl uses
// that neither v1.41.1 nor the semantic-conventions-genai snapshot in the
// test corpus (2026-05-11) defines.
var AfterV141 = []Source{
	{Name: CacheWriteInputTokens, Change: "open-telemetry/semantic-conventions-genai#440", Replaces: "gen_ai.usage.cache_creation.input_tokens"},
	{Name: ConversationCompacted, Change: "open-telemetry/semantic-conventions-genai#162"},
}
