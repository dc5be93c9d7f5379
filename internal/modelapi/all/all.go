// Package all registers every model API agentctl speaks: importing it
// (for its side effect) is how a program gets them. It is the one list of
// APIs; adding one is one line here.
package all

import (
	// Each registers its API values in its init.
	_ "github.com/agentctl/agentctl/internal/modelapi/anthropic"
	_ "github.com/agentctl/agentctl/internal/modelapi/openai"
	_ "github.com/agentctl/agentctl/internal/modelapi/scripted"
)
