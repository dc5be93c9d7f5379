package view_test

import (
	"fmt"
	"github.com/agentctl/agentctl/internal/heappeak"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctl/agentctl/internal/cli"
)

// BenchmarkView10k measures a 10,000-event session (largeSession, 2,500
// turns) in headless chromium: "open" loads the page in a new tab until
// the browser painted the drawn page, reporting the page's own clock at
// drawn and painted (ms since its navigation started) and the wall time
// from the navigate command; "write" is `agentctl view` writing the page
// (fold, diagnose, HTML). The goal is open under 2 s. bench/view/run.sh
// prints the figures.
func BenchmarkView10k(b *testing.B) {
	br := newBrowser(b)
	h := largeSession(b, 2500)
	dir := b.TempDir()
	page := filepath.Join(dir, "large.html")
	h.run(cli.ExitOK, "view", idLarge, "-o", page)
	fi, err := os.Stat(page)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			h.run(cli.ExitOK, "view", idLarge, "-o", filepath.Join(dir, "again.html"))
		}
		b.ReportMetric(float64(fi.Size())/(1<<20), "MiB")
	})
	b.Run("open", func(b *testing.B) {
		var ready, painted, wall float64
		n := 0
		for b.Loop() {
			start := time.Now()
			tb := br.open(b, page)
			wall += float64(time.Since(start).Microseconds()) / 1000
			var got struct{ Ready, Painted string }
			tb.eval(`({Ready: document.body.dataset.ready, Painted: document.body.dataset.painted})`, &got)
			r, p := num(b, got.Ready), num(b, got.Painted)
			ready, painted = ready+r, painted+p
			n++
			tb.close()
		}
		b.ReportMetric(ready/float64(n), "ms-drawn")
		b.ReportMetric(painted/float64(n), "ms-painted")
		b.ReportMetric(wall/float64(n), "ms-wall")
	})
}

func num(b *testing.B, s string) float64 {
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil {
		b.Fatalf("page timing %q: %v", s, err)
	}
	return f
}

// BenchmarkViewLong: `agentctl view` of one session of 200,000 events
// recorded through the recorder (no browser): the wall time, the page's
// size and the peak heap while it is written.
func BenchmarkViewLong(b *testing.B) {
	const id = "7e57000000200000"
	h := newHome(b)
	recordFlat(b, h, id, 200_000)
	dir := b.TempDir()
	page := filepath.Join(dir, "long.html")
	for b.Loop() {
		_, peak := heappeak.During(func() { h.run(cli.ExitOK, "view", id, "-o", page) })
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	}
	fi, err := os.Stat(page)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(fi.Size())/(1<<20), "page-MiB")
}
