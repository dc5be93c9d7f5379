// Package buildinfo says which agentctl this is, for session headers,
// `agentctl version` and debug bundles.
package buildinfo

import "runtime/debug"

// Version is set at link time (-ldflags "-X .../buildinfo.Version=v1.2.3").
var Version = "dev"

// Commit is the VCS revision the binary was built from, or "unknown" when
// the build carried none (go run, -buildvcs=false).
func Commit() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}
