package otelsession

// Result is what one OTLP export request came to. The receiver answers the
// exporter from it: every span not rejected is durable in a session log
// when Result is returned, and Rejected becomes OTLP's partial_success
// (rejected_spans or rejected_log_records, and an error message naming each
// reason), so an exporter never retries what was refused for good.
type Result struct {
	// Accepted counts the spans (or log records) that are now in a session,
	// including ones a retried export had already delivered: a retry is
	// answered as a success and adds nothing.
	Accepted int
	// Rejected lists what was refused, each with why.
	Rejected []Rejection
}

// Rejection is one span or log record refused, and the reason, written for
// the person reading the exporter's log ("span 3f2a…: attribute
// gen_ai.input.messages is 9 MiB, over the 1 MiB limit").
type Rejection struct {
	TraceID string // hex, as OTLP JSON spells it
	SpanID  string // hex; empty for a log record without a span
	Reason  string
}
