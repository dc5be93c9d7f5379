// Package runner drives one agent run through the harness loop of DESIGN.md
// and records every step through the session log as it happens:
//
//  1. Boot: create the session (header pinning provider and model, then the
//     first user message), or resume one: take its lease, fold its events,
//     reconcile intents left pending by a crash, and pick up tool calls that
//     were waiting for approval.
//  2. Turn: check the budget (a model call reserves its max output tokens),
//     compact when the projection passes the threshold (the summary held to
//     a third of what the pinned messages leave, its oldest parts dropped,
//     so any number of compactions fit the window), project, refuse a
//     request that still does not fit (context_overflow), call the model,
//     append assistant_message and model_call together.
//  3. For each tool call: permission (the mode's registry), argument
//     validation, the approval gate (approval_request, then stop with
//     awaiting_approval), budget, tool_intent with its idempotency key, the
//     call itself, tool_result.
//  4. When the model answers without tool calls, run the done checks; a
//     failure is fed back as a user message up to spec.Retries times.
//  5. Interruption (context cancelled by SIGINT/SIGTERM, or a file named
//     "cancel" in the session folder) stops dispatch, keeps partial text as
//     `interrupted`, cancels running tools and closes dangling calls.
//
// The task tool starts a subagent: a child run of this same loop, with its
// own session, called from the parent's tool dispatch and reconciled by
// the parent's resume (subagent.go has the rules).
//
// The log is written before anything is shown, so what a user sees was
// already durable. A Runner is used for one run at a time.
//
// # External agents
//
// A spec with agent: (spec.Agent) runs a program instead of the loop
// above. The runner does not know programs or proxies: Config.Agent (a
// Hosted, built by agenthost) does. The runner creates the session and
// hands it over as a Host (host.go): appends through the one fold, the
// workspace and sandbox set-up, the cancel file, the budget and the wall
// deadline, and the endings (failed, over budget, interrupted, the done
// checks) recorded exactly as for its own loop. Such a session is not
// resumed; replay run re-runs the program against its recording.
package runner
