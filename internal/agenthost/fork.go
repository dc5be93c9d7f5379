package agenthost

import (
	"github.com/agentctl/agentctl/internal/proxy"
	"github.com/agentctl/agentctl/internal/session"
	"github.com/agentctl/agentctl/internal/spec"
)

// Fork makes an external agent's run a fork of the session
// Agent.ReplayOf names (replay fork on an external agent's session): the
// agent runs again from its start, its first Until model calls are served
// from the recording (the Backend is a proxy.Replay with Until), and the
// rest are live.
type Fork struct {
	// From is the parent's seq the fork was asked at: the header's
	// forked_from.
	From int64
	// Until is the number of recorded model calls replayed.
	Until int
	// Provider and Model, when set, are the model the live calls go to
	// (the Backend asks for it: proxy.WithModel); the change is recorded
	// as a model_changed event at the first live call, and from then on
	// the pinned model is this one. The agent itself still asks for the
	// recorded model, which its replayed calls must match.
	Provider, Model string
}

// changes reports whether the fork goes live on another model than st's.
func (f *Fork) changes(st *session.State) bool {
	return f != nil && f.Model != "" && (f.Model != st.Model || (f.Provider != "" && f.Provider != st.Provider))
}

// forkModel is the model a call asks for as far as the policy is
// concerned: the fork's live model for a call after Until (the backend
// rewrites the request to it), the request's own otherwise. At the first
// live call of a fork onto another model, the change is recorded
// (model_changed: a model change is never silent). Called with x.mu held.
func (x *externalRun) forkModel(c *proxy.Call) (string, error) {
	f := x.a.Fork
	if f == nil || c.Turn <= f.Until || f.Model == "" {
		return c.Model, nil
	}
	if !x.forkLive {
		x.forkLive = true
		if prev := x.h.State(); f.changes(prev) {
			prov := f.Provider
			if prov == "" {
				prov = prev.Provider
			}
			if _, err := x.h.Append(session.ForkModelChanged(prov, f.Model, prev.Provider, prev.Model, c.Turn)); err != nil {
				return "", err
			}
		}
	}
	return f.Model, nil
}

// keySpec is the spec whose provider decides the key the proxy adds
// upstream (upstreamKey): the fork's live provider when it names one.
func keySpec(sp *spec.Spec, f *Fork) *spec.Spec {
	if f == nil || f.Provider == "" || f.Provider == sp.Model.Provider {
		return sp
	}
	c := *sp
	c.Model = spec.Model{Provider: f.Provider, ID: f.Model}
	return &c
}
