package testenv

// LoadAgent validates the fixtures' models against the registered APIs,
// as the programs that load specs (which link internal/modelapi/all) do.
import _ "github.com/agentctl/agentctl/internal/modelapi/all"
