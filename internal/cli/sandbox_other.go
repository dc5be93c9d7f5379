//go:build !linux

package cli

import (
	"fmt"
	"io"

	"github.com/agentctl/agentctl/internal/sandbox"
)

func writeProbes(w io.Writer, rep sandbox.Report) {
	fmt.Fprintf(w, "  %-18s %s (namespaces are Linux only)\n", "os", rep.OS)
}
