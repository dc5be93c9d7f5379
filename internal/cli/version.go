package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/agentctl/agentctl/internal/buildinfo"
)

type versionOptions struct {
	JSON bool
}

type versionInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

func newVersionCmd(f *Factory, runF func(context.Context, *versionOptions) error) *cobra.Command {
	opts := &versionOptions{}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print agentctl's version and build commit",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return versionRun(f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print a JSON object")
	return cmd
}

func versionRun(f *Factory, opts *versionOptions) error {
	v := versionInfo{buildinfo.Version, buildinfo.Commit(), runtime.Version(), runtime.GOOS, runtime.GOARCH}
	if opts.JSON {
		return json.NewEncoder(f.Out).Encode(v)
	}
	_, err := fmt.Fprintf(f.Out, "agentctl %s (commit %s, %s %s/%s)\n", v.Version, v.Commit, v.Go, v.OS, v.Arch)
	return err
}
