package transcript_test

import (
	"testing"

	"github.com/agentctl/agentctl/internal/testenv"
)

// TestNoSDKDeps: importing another agent's transcript prices its tokens
// but calls no model, so it must not link the vendor SDKs. It did, through
// provider for the price table: 308 packages before
// internal/pricing, 134 after.
func TestNoSDKDeps(t *testing.T) {
	testenv.LinksNone(t, "github.com/agentctl/agentctl/internal/transcript",
		"github.com/openai/openai-go", "github.com/anthropics/anthropic-sdk-go")
}
