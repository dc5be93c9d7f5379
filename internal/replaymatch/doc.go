// Package replaymatch decides whether a request a program sends during a
// replay is the one the recorded session holds at that turn. It is the one
// matcher every replay path uses (proxy --replay, eval replay scenarios,
// replay run of an external agent), whatever the session's origin.
//
// Before comparing, known volatile spans (paths, dates, durations, random
// ids, harness context blocks) are normalised on both sides by the table
// below; each normaliser is named so that a replay report can say what it
// changed, and each is tested on real requests of the client that produces
// it. --strict uses none of them.
package replaymatch
