package ui

import (
	"fmt"
	"math"

	"github.com/agentctl/agentctl/internal/clip"
)

// chart is a bar chart drawn on the server as SVG (templates/partial-chart.html):
// no script and no library, so it shows in the export and under the CSP,
// and its labels are escaped by html/template like any recorded text.
type chart struct {
	ID, Title     string
	Width, Height int
	// Columns draws vertical columns along a time axis; else horizontal
	// bars, one row per label.
	Columns bool
	Bars    []chartBar
	// Dropped counts the points past chartMaxBars that are not drawn.
	Dropped int
}

// chartBar is one bar with its label and value placed.
type chartBar struct {
	X, Y, W, H int
	// Label and Value are the text; Raw the number the bar's length
	// shows (tests read it back).
	Label, Value string
	// Short is Label cut to fit beside its bar.
	Short  string
	Raw    float64
	LX, LY int
	VX, VY int
	// ShowLabel: a crowded time axis labels every few columns.
	ShowLabel bool
}

// chartMaxBars bounds the bars of one chart.
const chartMaxBars = 60

// chartPoint is one label and its value.
type chartPoint struct {
	Label string
	Value float64
}

// barChart lays out points as horizontal bars, value formatted by format.
func barChart(id, title string, pts []chartPoint, format func(float64) string) *chart {
	c := &chart{ID: id, Title: title, Width: 560}
	if len(pts) > chartMaxBars {
		c.Dropped, pts = len(pts)-chartMaxBars, pts[:chartMaxBars]
	}
	const labelW, rowH, valueW = 170, 22, 80
	most := maxOf(pts)
	for i, p := range pts {
		w := 0
		if most > 0 && p.Value > 0 {
			w = max(1, int(math.Round(p.Value/most*float64(c.Width-labelW-valueW))))
		}
		y := i*rowH + 4
		c.Bars = append(c.Bars, chartBar{X: labelW, Y: y, W: w, H: rowH - 6, Label: p.Label, Short: clip.Runes(p.Label, 22), Value: format(p.Value), Raw: p.Value,
			LX: labelW - 6, LY: y + 12, VX: labelW + w + 4, VY: y + 12, ShowLabel: true})
	}
	c.Height = len(pts)*rowH + 8
	return c
}

// columnChart lays out points (oldest first) as columns along a time axis.
func columnChart(id, title string, pts []chartPoint, format func(float64) string) *chart {
	c := &chart{ID: id, Title: title, Width: 390, Height: 220, Columns: true}
	if len(pts) > chartMaxBars {
		c.Dropped, pts = len(pts)-chartMaxBars, pts[len(pts)-chartMaxBars:]
	}
	const base, top, left = 190, 20, 10
	most := maxOf(pts)
	slot := (c.Width - 2*left) / max(len(pts), 1)
	every := max(1, (len(pts)+9)/10)
	for i, p := range pts {
		h := 0
		if most > 0 && p.Value > 0 {
			h = max(1, int(math.Round(p.Value/most*float64(base-top))))
		}
		w := max(2, min(40, slot*7/10))
		x := left + i*slot + (slot-w)/2
		c.Bars = append(c.Bars, chartBar{X: x, Y: base - h, W: w, H: h, Label: p.Label, Short: clip.Runes(p.Label, 12), Value: format(p.Value), Raw: p.Value,
			LX: x + w/2, LY: base + 16, VX: x + w/2, VY: base - h - 4, ShowLabel: i%every == 0 || i == len(pts)-1})
	}
	return c
}

func maxOf(pts []chartPoint) float64 {
	m := 0.0
	for _, p := range pts {
		m = max(m, p.Value)
	}
	return m
}

func plainNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.4g", f)
}
