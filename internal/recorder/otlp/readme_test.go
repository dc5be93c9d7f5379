package otlp

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The README's examples are what newcomers paste. An endpoint on the
// gRPC port with the default (HTTP) exporter, or the reverse, silently
// exports nothing, so every example line must pair the port with the
// protocol ConfigFromEnv would pick for it.
func TestREADMEEndpointsMatchProtocol(t *testing.T) {
	var lines []string
	for _, f := range []string{"../../../README.md", "../../cli/export.go", "../../cli/trace.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "OTEL_EXPORTER_OTLP_ENDPOINT=http") {
				lines = append(lines, l)
			}
		}
	}
	if len(lines) == 0 {
		t.Fatal("no OTLP endpoint example found in the README: the test reads the wrong file")
	}
	assign := regexp.MustCompile(`\b(OTEL_[A-Z_]+)=(\S+)`)
	port := regexp.MustCompile(`:(\d+)\b`)
	for _, l := range lines {
		env := map[string]string{}
		for _, m := range assign.FindAllStringSubmatch(l, -1) {
			env[m[1]] = m[2]
		}
		c, err := ConfigFromEnv(func(k string) string { return env[k] })
		if err != nil {
			t.Errorf("%q: %v", l, err)
			continue
		}
		p := port.FindStringSubmatch(env["OTEL_EXPORTER_OTLP_ENDPOINT"])
		if p == nil {
			t.Errorf("%q: no port in the endpoint", l)
			continue
		}
		want := map[string]string{"4317": ProtocolGRPC, "4318": ProtocolHTTP}[p[1]]
		got := c.TracesProtocol
		if got == "" {
			got = ProtocolHTTP // the exporter's default, as traceExporter picks it
		}
		if want != "" && got != want {
			t.Errorf("README example %q sends %s to port %s, which expects %s", strings.TrimSpace(l), got, p[1], want)
		}
	}
}
