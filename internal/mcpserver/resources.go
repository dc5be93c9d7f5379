package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The resources a client can attach by session id: the timeline (the
// first page of show_session, as text) and the diagnosis.
const (
	timelineTemplate  = "agentctl://sessions/{id}/timeline"
	diagnosisTemplate = "agentctl://sessions/{id}/diagnosis"
)

func (s *server) addResources(srv *mcp.Server) {
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "session-timeline", URITemplate: timelineTemplate, MIMEType: "application/json",
		Description: "The first 64 KiB of a session's events in seq order (show_session from the start; call the tool for later pages). " + dataNotInstructions}, s.readTimeline)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "session-diagnosis", URITemplate: diagnosisTemplate, MIMEType: "text/plain",
		Description: "A session's postmortem as 'agentctl diagnose ID' prints it (a few KiB). " + dataNotInstructions}, s.readDiagnosis)
}

// sessionOf is the id in an agentctl://sessions/{id}/what URI.
func sessionOf(uri, what string) (string, bool) {
	rest, ok := strings.CutPrefix(uri, "agentctl://sessions/")
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, "/"+what)
	return id, ok && id != "" && !strings.Contains(id, "/")
}

func (s *server) readTimeline(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	name, ok := sessionOf(req.Params.URI, "timeline")
	if !ok {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	r, err := s.resolve(name)
	if err != nil {
		return nil, err
	}
	p, err := s.readPage(ctx, r, 0, DefaultBudget, DefaultMaxString)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(b)}}}, nil
}

func (s *server) readDiagnosis(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	name, ok := sessionOf(req.Params.URI, "diagnosis")
	if !ok {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	rep, err := s.diagnoseReport(ctx, name)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := rep.WriteText(&buf); err != nil {
		return nil, err
	}
	text := inertString(buf.String(), DefaultBudget)
	if len(text) > MaxBudget {
		return nil, fmt.Errorf("the diagnosis is %d bytes, more than %d", len(text), MaxBudget)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
}
