package spec_test

import (
	"testing"

	"github.com/agentctl/agentctl/internal/testenv"
)

// TestNoSDKDeps: loading a spec, or reading one back from a log's header,
// calls no model, so it must not link the vendor SDKs. It did, through provider (for the price table and the
// model script): 301 packages before internal/pricing, 195 after.
func TestNoSDKDeps(t *testing.T) {
	testenv.LinksNone(t, "github.com/agentctl/agentctl/internal/spec",
		"github.com/openai/openai-go", "github.com/anthropics/anthropic-sdk-go")
}
