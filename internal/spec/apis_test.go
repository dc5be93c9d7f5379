package spec

// The spec's tests validate models of every registered API, as the
// programs that load specs (which link internal/modelapi/all) do.
import _ "github.com/agentctl/agentctl/internal/modelapi/all"
