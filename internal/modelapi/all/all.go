// Package all registers every model API agentctl speaks: importing it
// (for its side effect) is how a program gets them. It is the one list of
// APIs; adding one is one line here.
package all

import (
	// Google's Gemini API.
	_ "github.com/agentctl/agentctl/internal/provider/gemini"
)
