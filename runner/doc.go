// Package runner drives one agent run through the harness loop of DESIGN.md
// and records every step through the session log as it happens:
//
//  1. Boot: create the session (header pinning provider and model, then the
//     first user message), or resume one: take its lease, fold its events,
//     reconcile intents left pending by a crash, and pick up tool calls that
//     were waiting for approval.
//  2. Turn: check the budget (a model call reserves its max output tokens),
//     compact when the projection passes the threshold, project, call the
//     model, append assistant_message and model_call together.
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
package runner
