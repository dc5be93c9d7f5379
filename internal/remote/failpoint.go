package remote

// FailpointEnv names the variable that, set to a failpoint's name, makes
// the process kill itself with SIGKILL when it reaches that point. The
// crash tests run the built binary with it.
const FailpointEnv = "AGENTCTL_REMOTE_FAILPOINT"

// Failpoints.
const (
	FailPushUploaded    = "push-uploaded"    // every history object uploaded, the push record not yet written
	FailCompactUploaded = "compact-uploaded" // a segment uploaded, the merged objects not yet deleted
	FailCompactDeleted  = "compact-deleted"  // one merged object deleted, the others not yet
)
