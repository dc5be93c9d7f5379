package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentctl/agentctl/internal/session"
)

// Row is one event as a Parquet row. Column names are the event's JSON
// names (see session.Event); every row carries its session_id. Columns
// other than session_id, seq, ts and kind are optional: a field the event
// does not use is NULL. Nested values (tool_calls, args, spec, attrs,
// source_seqs) are JSON text. raw holds the whole record of a kind this
// version does not know, so nothing a newer agentctl wrote is lost.
type Row struct {
	SessionID string    `parquet:"session_id,dict"`
	Seq       int64     `parquet:"seq"`
	TS        time.Time `parquet:"ts,timestamp(microsecond:utc)"`
	Kind      string    `parquet:"kind,dict"`

	Name            string `parquet:"name,optional,dict"`
	Provider        string `parquet:"provider,optional,dict"`
	Model           string `parquet:"model,optional,dict"`
	System          string `parquet:"system,optional"`
	Spec            string `parquet:"spec,optional"`
	SpecPath        string `parquet:"spec_path,optional"`
	SpecHash        string `parquet:"spec_hash,optional"`
	AgentctlVersion string `parquet:"agentctl_version,optional"`
	HarnessCommit   string `parquet:"harness_commit,optional"`
	Workspace       string `parquet:"workspace,optional"`
	ParentSessionID string `parquet:"parent_session_id,optional"`
	ForkedFrom      int64  `parquet:"forked_from,optional"`
	ParentSeq       int64  `parquet:"parent_seq,optional"`

	Text      string `parquet:"text,optional"`
	ToolCalls string `parquet:"tool_calls,optional"`

	RequestDigest string  `parquet:"request_digest,optional"`
	LatencyMS     int64   `parquet:"latency_ms,optional"`
	InputTokens   int64   `parquet:"input_tokens,optional"`
	OutputTokens  int64   `parquet:"output_tokens,optional"`
	CostUSD       float64 `parquet:"cost_usd,optional"`
	FinishReason  string  `parquet:"finish_reason,optional,dict"`

	CallID         string `parquet:"call_id,optional"`
	Tool           string `parquet:"tool,optional,dict"`
	Args           string `parquet:"args,optional"`
	IdempotencyKey string `parquet:"idempotency_key,optional"`
	Output         string `parquet:"output,optional"`
	Artifact       string `parquet:"artifact,optional"`
	Scope          string `parquet:"scope,optional,dict"`

	Through    int64  `parquet:"through,optional"`
	Summary    string `parquet:"summary,optional"`
	SourceSeqs string `parquet:"source_seqs,optional"`

	Status   string `parquet:"status,optional,dict"`
	Outcome  string `parquet:"outcome,optional,dict"`
	Reason   string `parquet:"reason,optional"`
	Evidence string `parquet:"evidence,optional"`
	Error    string `parquet:"error,optional"`

	ChildSessionID string `parquet:"child_session_id,optional"`
	Attrs          string `parquet:"attrs,optional"`
	Raw            string `parquet:"raw,optional"`

	// Added after the first release, at the end so that files written
	// before read unchanged (their rows have these NULL).
	Refusal                  string `parquet:"refusal,optional"`
	CacheReadInputTokens     int64  `parquet:"cache_read_input_tokens,optional"`
	CacheCreationInputTokens int64  `parquet:"cache_creation_input_tokens,optional"`
	MaxTokens                int64  `parquet:"max_tokens,optional"`
	ResponseID               string `parquet:"response_id,optional"`
	ErrorType                string `parquet:"error_type,optional,dict"`
	Attempt                  int64  `parquet:"attempt,optional"`
	GitSHA                   string `parquet:"git_sha,optional"`
}

// FromEvent converts an event of session id into a row. The timestamp is
// kept to the microsecond (Parquet TIMESTAMP(MICROS), UTC).
func FromEvent(id string, e session.Event) (Row, error) {
	r := Row{
		SessionID: id, Seq: e.Seq, TS: e.TS.UTC().Truncate(time.Microsecond), Kind: string(e.Kind),
		Name: e.Name, Provider: e.Provider, Model: e.Model, System: e.System, Spec: string(e.Spec),
		SpecPath: e.SpecPath, SpecHash: e.SpecHash, AgentctlVersion: e.AgentctlVersion,
		HarnessCommit: e.HarnessCommit, Workspace: e.Workspace, ParentSessionID: e.ParentSessionID,
		ForkedFrom: e.ForkedFrom, ParentSeq: e.ParentSeq, Text: e.Text, RequestDigest: e.RequestDigest, LatencyMS: e.LatencyMS,
		InputTokens: e.InputTokens, OutputTokens: e.OutputTokens, CostUSD: e.CostUSD,
		FinishReason: e.FinishReason, CallID: e.CallID, Tool: e.Tool, Args: string(e.Args),
		IdempotencyKey: e.IdempotencyKey, Output: e.Output, Artifact: e.Artifact, Scope: e.Scope,
		Through: e.Through, Summary: e.Summary, Status: e.Status, Outcome: e.Outcome, Reason: e.Reason,
		Evidence: e.Evidence, Error: e.Error, ChildSessionID: e.ChildSessionID, Attrs: string(e.Attrs),
		Raw: string(e.Raw), Refusal: e.Refusal, CacheReadInputTokens: e.CacheReadInputTokens,
		CacheCreationInputTokens: e.CacheCreationInputTokens, MaxTokens: e.MaxTokens, ResponseID: e.ResponseID,
		ErrorType: e.ErrorType, Attempt: e.Attempt, GitSHA: e.GitSHA,
	}
	var err error
	if len(e.ToolCalls) > 0 {
		if r.ToolCalls, err = jsonText(e.ToolCalls); err != nil {
			return Row{}, fmt.Errorf("history: event %d of %s: tool_calls: %w", e.Seq, id, err)
		}
	}
	if len(e.SourceSeqs) > 0 {
		if r.SourceSeqs, err = jsonText(e.SourceSeqs); err != nil {
			return Row{}, fmt.Errorf("history: event %d of %s: source_seqs: %w", e.Seq, id, err)
		}
	}
	return r, nil
}

// Event converts a row back into the event it was made from. An event of
// an unknown kind is decoded from raw, exactly as it was recorded.
func (r Row) Event() (session.Event, error) {
	if r.Raw != "" {
		e, err := session.Decode([]byte(r.Raw))
		if err != nil {
			return session.Event{}, fmt.Errorf("history: row %d of %s: %w", r.Seq, r.SessionID, err)
		}
		return e, nil
	}
	e := session.Event{
		Seq: r.Seq, TS: r.TS, Kind: session.Kind(r.Kind), Name: r.Name, Provider: r.Provider, Model: r.Model,
		System: r.System, Spec: rawJSON(r.Spec), SpecPath: r.SpecPath, SpecHash: r.SpecHash,
		AgentctlVersion: r.AgentctlVersion, HarnessCommit: r.HarnessCommit, Workspace: r.Workspace,
		ParentSessionID: r.ParentSessionID, ForkedFrom: r.ForkedFrom, ParentSeq: r.ParentSeq, Text: r.Text,
		RequestDigest: r.RequestDigest, LatencyMS: r.LatencyMS, InputTokens: r.InputTokens,
		OutputTokens: r.OutputTokens, CostUSD: r.CostUSD, FinishReason: r.FinishReason, CallID: r.CallID,
		Tool: r.Tool, Args: rawJSON(r.Args), IdempotencyKey: r.IdempotencyKey, Output: r.Output,
		Artifact: r.Artifact, Scope: r.Scope, Through: r.Through, Summary: r.Summary, Status: r.Status,
		Outcome: r.Outcome, Reason: r.Reason, Evidence: r.Evidence, Error: r.Error,
		ChildSessionID: r.ChildSessionID, Attrs: rawJSON(r.Attrs), Refusal: r.Refusal,
		CacheReadInputTokens: r.CacheReadInputTokens, CacheCreationInputTokens: r.CacheCreationInputTokens,
		MaxTokens: r.MaxTokens, ResponseID: r.ResponseID, ErrorType: r.ErrorType, Attempt: r.Attempt,
		GitSHA: r.GitSHA,
	}
	if r.Kind == string(session.KindSessionStarted) {
		e.SessionID = r.SessionID
	}
	if r.ToolCalls != "" {
		if err := json.Unmarshal([]byte(r.ToolCalls), &e.ToolCalls); err != nil {
			return session.Event{}, fmt.Errorf("history: row %d of %s: tool_calls: %w", r.Seq, r.SessionID, err)
		}
	}
	if r.SourceSeqs != "" {
		if err := json.Unmarshal([]byte(r.SourceSeqs), &e.SourceSeqs); err != nil {
			return session.Event{}, fmt.Errorf("history: row %d of %s: source_seqs: %w", r.Seq, r.SessionID, err)
		}
	}
	return e, nil
}

func rawJSON(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// jsonText encodes v without HTML escaping, as the log does.
func jsonText(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}
