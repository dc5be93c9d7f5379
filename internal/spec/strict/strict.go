// Package strict decodes the YAML files agentctl reads from users (specs,
// model scripts, eval suites) strictly: unknown keys are errors, aliases
// are bounded, and every error is a file:line *Error that says what to
// change. It is a leaf, so that the readers of scripts (package provider)
// need not import package spec, nor spec the model clients.
package strict

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Error is a spec problem at a place in a file. The message is lowercase
// and says what to change.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

var lineRE = regexp.MustCompile(`^line (\d+): (.*)$`)

// DecodeStrict decodes YAML into v rejecting unknown keys, and returns the
// document node so callers can point at lines. Errors are *Error.
func Decode(file string, data []byte, v any) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlError(file, err)
	}
	if len(doc.Content) == 0 {
		return nil, &Error{File: file, Msg: "the file is empty"}
	}
	if n := expanded(&doc, maxExpandedNodes); n > maxExpandedNodes {
		return nil, &Error{File: file, Msg: fmt.Sprintf("excessive aliasing: the document expands to more than %d YAML nodes once its aliases are resolved; write the values out or use fewer aliases", maxExpandedNodes)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return nil, yamlError(file, err)
	}
	return doc.Content[0], nil
}

// maxExpandedNodes bounds what a spec, script or suite may expand to with
// its aliases resolved. yaml.v3 guards its own struct decoding, but custom
// unmarshalers (a script's tool-call args) walk the node tree themselves,
// where a few nested aliases ("billion laughs") would expand without end.
const maxExpandedNodes = 1_000_000

// expanded counts the nodes of n with every alias resolved at each of its
// uses, stopping once the count passes limit.
func expanded(n *yaml.Node, limit int) int {
	count := 0
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		if n == nil || count > limit {
			return
		}
		count++
		if depth > 10_000 {
			count = limit + 1 // an alias cycle yaml.v3 did not refuse
			return
		}
		if n.Kind == yaml.AliasNode {
			walk(n.Alias, depth+1)
			return
		}
		for _, c := range n.Content {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return count
}

// yamlError turns yaml.v3's messages ("yaml: unmarshal errors:\n  line 3:
// field x not found in type spec.Spec") into file:line errors, the first
// one leading.
func yamlError(file string, err error) error {
	var te *yaml.TypeError
	var msgs []string
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var errs []error
	for _, m := range msgs {
		m = strings.TrimSpace(m)
		line := 0
		if sub := lineRE.FindStringSubmatch(m); sub != nil {
			line, _ = strconv.Atoi(sub[1])
			m = sub[2]
		}
		m = friendlier(m)
		errs = append(errs, &Error{File: file, Line: line, Msg: m})
	}
	return errors.Join(errs...)
}

var fieldRE = regexp.MustCompile(`^field (\S+) not found in type (\S+)$`)
var typeRE = regexp.MustCompile("^cannot unmarshal !!(\\w+) `(.*)` into (\\S+)$")

func friendlier(m string) string {
	if sub := fieldRE.FindStringSubmatch(m); sub != nil {
		return fmt.Sprintf("unknown key %q (check its spelling and indentation)", sub[1])
	}
	if sub := typeRE.FindStringSubmatch(m); sub != nil {
		return fmt.Sprintf("%q is a %s, but a %s is expected here", sub[2], sub[1], goTypeName(sub[3]))
	}
	return m
}

func goTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "list"
	case strings.Contains(t, "int"):
		return "whole number"
	case strings.Contains(t, "float"):
		return "number"
	case t == "bool":
		return "boolean (true/false)"
	case t == "string":
		return "string"
	}
	return "mapping"
}
