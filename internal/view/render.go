package view

import (
	"bufio"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
)

// FormatVersion is the version of the data a page embeds; the page's
// script reads only its own version, so it is bumped on any change a
// reader could see.
const FormatVersion = 1

// Page is one HTML page: a session's timeline or two sessions compared.
// Exactly one of Session and Compare is set.
type Page struct {
	Title   string
	Session *Session
	Compare *Compare
	// Generator names what wrote the page ("agentctl v1.2.3").
	Generator string
}

// data is the JSON block the page embeds.
type data struct {
	Version   int      `json:"version"`
	Generator string   `json:"generator,omitempty"`
	Session   *Session `json:"session,omitempty"`
	Compare   *Compare `json:"compare,omitempty"`
}

var (
	//go:embed assets/view.css
	css string
	//go:embed assets/view.js
	js string
	//go:embed assets/page.html
	pageHTML string
)

// page is the template. html/template escapes the title as text and the
// data as JSON for a script element (no "</script>" or "<!--" can appear
// in it: "<", ">" and "&" are written as \u003c, \u003e, \u0026). The
// content security policy lets only the page's own style and script run
// (by their hashes) and forbids every fetch, so an element a recorded
// string somehow smuggled in could neither run nor call out.
var page = template.Must(template.New("page").Parse(pageHTML))

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// CSP is the page's Content-Security-Policy.
var CSP = "default-src 'none'; style-src " + hash(css) + "; script-src " + hash(js) + "; base-uri 'none'; form-action 'none'"

// Write writes the page to w as one self-contained HTML file: its style,
// script and data inline, nothing fetched, so it opens from file:// on a
// machine with no network.
func Write(w io.Writer, p Page) error {
	if (p.Session == nil) == (p.Compare == nil) {
		return fmt.Errorf("view: write page: give a session or a comparison")
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	err := page.Execute(bw, map[string]any{
		"Title": p.Title,
		"CSP":   CSP,
		"CSS":   template.CSS(css),
		"JS":    template.JS(js),
		"Data":  data{Version: FormatVersion, Generator: p.Generator, Session: p.Session, Compare: p.Compare},
	})
	if err != nil {
		return fmt.Errorf("view: write page: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("view: write page: %w", err)
	}
	return nil
}
