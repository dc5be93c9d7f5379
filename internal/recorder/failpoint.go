package recorder

// FailpointEnv names the environment variable that, set to a failpoint's
// name, makes the process kill itself with SIGKILL when it reaches that
// point while creating a session: the start of a run, before its first
// event is durable, which the runner's own failpoints (after an event)
// cannot reach. Script tests set it on the real binary.
const FailpointEnv = "AGENTCTL_RECORDER_FAILPOINT"

// Failpoints, in the order Store.Create reaches them.
const (
	FailCreateLeased  = "create-leased"       // the session folder and its lease exist, no log yet
	FailCreateWritten = "create-temp-written" // the log's temp file holds the header, fsync'd, not linked
)
