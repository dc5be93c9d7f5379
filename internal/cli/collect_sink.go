package cli

import (
	"errors"

	"github.com/agentctl/agentctl/internal/collect"
)

// openCollectSink opens what collect writes into: the OTLP mapping
// (internal/otelsession) over the home's store, and its Close, which
// seals the sessions.
//
// Interim: the mapping lands from its own branch (h-otelmap); until it is
// merged, collect refuses to start rather than acknowledge exports it
// would not keep.
func openCollectSink(f *Factory, opts *collectOptions) (collect.Sink, func() error, error) {
	return nil, nil, errors.New("collect: this build has no OTLP mapping (internal/otelsession.NewIngester) yet")
}
