// Package modelapi is the registry of the model APIs agentctl speaks: one
// API value per API (the scripted model, OpenAI Chat Completions, OpenAI
// Responses, Anthropic Messages, …), registered once from the API's own
// package, and asked by everything else. It is restic's
// internal/backend/all and the OpenTelemetry Collector's NewFactory:
// a second list of providers anywhere (a switch on "openai") is a list
// that drifts, so there is none. An unknown name is an *UnknownError that
// lists the known ones, never a default.
//
// # What an API value knows
//
//   - its names: Provider, a spec's model.provider and the provider field
//     of the session header and model_call events; Name, the "api"
//     attribute the proxy records on a model_call and replay reads back;
//   - its spec rules: Check (model.script for the scripted model), KeyEnv
//     (the key variable when model.api_key_env names none), BaseURL (the
//     API root when model.base_url is empty);
//   - its client: Client makes the provider.Provider a spec runs with;
//   - its agents' environment: Env, the variables that point its SDKs and
//     CLIs at the proxy (base URL, key, model);
//   - its OpenTelemetry name: GenAIProvider (gen_ai.provider.name);
//   - its wire format, for the proxy: Wire's routes, request parsing into
//     the session's messages, streamed and plain answer parsing, the
//     rendering of answers agentctl makes (scripted, replayed), the error
//     shape and the credential header; optionally ModelSetter (a model
//     named outside the body, for a fork's --model) and Sniffer (headers
//     that claim an unroutable request).
//
// Prices are not here: the price table (internal/pricing) is keyed by
// model id, which is unique across providers.
//
// # Who asks
//
// internal/spec (validation, key variables, an external agent's
// environment), internal/agent (the client and the external agent's
// backend), internal/agenthost (the upstream key), internal/evals (model
// sections of suites), internal/proxy (routes, parsing, rendering,
// errors, credentials, a fork's model), internal/recorder/otlp
// (server.address, gen_ai.provider.name), internal/transcript (how a
// provider counts input tokens), internal/cli (the proxy's listening
// line).
//
// # Adding an API
//
//  1. Write a package internal/modelapi/<name> whose init calls Register
//     with one API value: its client (usually in internal/provider), its
//     Wire (routes, ParseRequest, ParseResponse, ParseError, NewEncoder,
//     ResponseID, ErrorBody, SetKey).
//  2. Add the package to internal/modelapi/all (one blank import).
//  3. Give it its captures: one entry in TestContract
//     (internal/modelapi/all/contract_test.go), a modelapitest.Suite with
//     a request of the API and the real recorded answer of each case
//     (testdata/corpus, with SOURCES.md), and in Suite.Missing the reason
//     for each case the corpus has no capture of. The contract suite
//     (internal/modelapi/modelapitest) parses, renders, records and
//     replays each; a registered API without an entry fails.
//  4. Add its models to internal/pricing and say it in README.md's
//     provider list.
//
// TestNoSwitchOnAPINames fails when code outside internal/modelapi
// compares a value with a registered API's or provider's name.
//
// # Linking
//
// This package is a leaf (it holds the model boundary's types too:
// Provider, Request, Response, Error, which package provider aliases), so
// that internal/spec can validate a model section without linking the
// vendor SDKs. The values are registered by the packages under
// internal/modelapi, which package all imports: programs that run specs
// (internal/agent, internal/runner) and the proxy import all; a package's
// tests that load specs without those import it themselves.
//
// Nothing else changes: the spec accepts the provider, the runner calls
// the client, the proxy serves, records, replays and forks the routes.
//
// # Example
//
//	api, err := modelapi.Lookup(sp.Model.Provider) // "gemnii": unknown provider "gemnii": want one of anthropic, openai, scripted
//	if err != nil { … }
//	p, err := api.Client(modelapi.ClientConfig{Model: sp.Model.ID, APIKey: key})
//
// # Concurrency
//
// Register is called from init functions; Lookup, LookupWire, Match and
// All may be called from any goroutine. A Wire holds no state; an Encoder
// belongs to one answer.
package modelapi
