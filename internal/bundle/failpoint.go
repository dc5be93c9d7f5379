package bundle

// FailpointEnv names the environment variable that, set to a failpoint's
// name, makes the process kill itself with SIGKILL when it reaches that
// point. Script tests set it on the real binary.
const FailpointEnv = "AGENTCTL_BUNDLE_FAILPOINT"

// FailMembersWritten is reached when every member but the manifest is in
// the bundle's temp file and the intermediate folder still exists.
const FailMembersWritten = "bundle-members-written"
