package bundle

import "os"

// FailpointEnv names the environment variable that, set to a failpoint's
// name, makes the process kill itself with SIGKILL when it reaches that
// point. Script tests set it on the real binary.
const FailpointEnv = "AGENTCTL_BUNDLE_FAILPOINT"

// FailMembersWritten is reached when every member but the manifest is in
// the bundle's temp file and the intermediate folder still exists.
const FailMembersWritten = "bundle-members-written"

func failpoint(name string) {
	if os.Getenv(FailpointEnv) == name {
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			p.Kill() // SIGKILL on unix: no deferred code, no flush
		}
		select {} // the signal is delivered asynchronously
	}
}
