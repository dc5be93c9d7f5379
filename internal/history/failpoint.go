package history

// FailpointEnv names the environment variable that, set to a failpoint's
// name, makes the process kill itself with SIGKILL when it reaches that
// point. Crash tests re-execute the test binary with it.
const FailpointEnv = "AGENTCTL_HISTORY_FAILPOINT"

// Failpoints, in the order compaction reaches them.
const (
	FailSegmentWritten  = "compact-segment-written"  // a new segment is on disk, the manifest not yet swapped
	FailManifestSwapped = "compact-manifest-swapped" // the manifest is swapped, retired files not yet removed
	FailSealWritten     = "seal-file-written"        // a sealed file is on disk, the manifest not yet swapped
)
