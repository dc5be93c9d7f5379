package otelsession

// The tests read the registered model APIs' names (a gen_ai.provider.name
// such as gcp.gemini is the provider agentctl names gemini), as agentctl
// does.
import _ "github.com/agentctl/agentctl/internal/modelapi/all"
