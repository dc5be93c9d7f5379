package recorder

// The session folder's layout: what SessionDir(id) holds, named once here
// so the runner, the proxy, bundle, resume and the tests agree on it
// without importing each other (bundle once linked the whole runner for
// three of these names, and the proxy declared its own artifacts folder).
// The log is the only record; everything else is derived or evidence.
const (
	// LogFile is the event log, the session's one source of truth.
	LogFile = "events.log"
	// LeaseFile is held (flock) by the one process writing the log.
	LeaseFile = "lease"
	// WorkspaceDir is the session's own workspace, when the spec names
	// no workspace.path.
	WorkspaceDir = "workspace"
	// ArtifactsDir holds whole outputs whose recorded text was cut (tool
	// calls, an external agent's output) and the proxy's raw request and
	// response bodies; events name them by paths relative to the session
	// folder ("artifacts/...").
	ArtifactsDir = "artifacts"
	// ProcsDir records every started tool process (the sandbox init)
	// until it has been waited for, so that resume can prove none of an
	// earlier attempt still runs.
	ProcsDir = "procs"
	// CheckpointsFile holds checkpoints, one JSON object a line: derived
	// state resume uses to avoid folding the whole log; a missing,
	// truncated or corrupt file only makes resume fold from the start.
	CheckpointsFile = "checkpoints.jsonl"
	// GitDir is the session's git folder, next to the workspace and never
	// inside it, so the agent can neither rewrite the run's history nor
	// arm its config or hooks (see gitsafe.Tracker).
	GitDir = "git"
	// CancelFile, when it appears, interrupts the run like SIGINT, for
	// callers that cannot send signals.
	CancelFile = "cancel"
)
