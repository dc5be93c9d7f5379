// Package otelsession turns OpenTelemetry traces and logs that production
// agents already emit (GenAI semantic conventions current and earlier,
// OpenInference, OpenLLMetry, Vercel's AI SDK) into ordinary agentctl
// sessions, so a production conversation can be shown, queried, bundled,
// replayed behind the proxy and forked like one agentctl recorded itself.
//
// It is the one place the mapping lives: `agentctl collect` (a live OTLP
// receiver) and `agentctl import otlp` (files and buckets) both hand it
// OTLP export requests and get back what was accepted and what was not.
package otelsession
