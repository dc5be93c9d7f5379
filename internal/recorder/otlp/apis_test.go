package otlp

// The tests read the provider facts (key variables, base URLs, usage
// conventions) of every registered model API, as agentctl does.
import _ "github.com/agentctl/agentctl/internal/modelapi/all"
