package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"sort"
	"strings"
)

// runPlot turns a results file into the markdown table and an SVG chart.
func runPlot(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("plot", flag.ContinueOnError)
	in := fs.String("in", "docs/bench-fanout.json", "results written by the driver's -out")
	svg := fs.String("svg", "docs/bench-fanout.svg", "chart to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	b, err := os.ReadFile(*in)
	if err != nil {
		return fmt.Errorf("read results: %w", err)
	}
	var run Run
	if err := json.Unmarshal(b, &run); err != nil {
		return fmt.Errorf("decode results %s: %w", *in, err)
	}
	if err := writeTable(stdout, &run); err != nil {
		return err
	}
	f, err := os.Create(*svg)
	if err != nil {
		return fmt.Errorf("create chart: %w", err)
	}
	if err := writeSVG(f, &run); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

type cellKey struct{ streams, clusters int }

func index(run *Run) (map[cellKey]map[string]*Result, []cellKey) {
	cells := map[cellKey]map[string]*Result{}
	var keys []cellKey
	for _, r := range run.Results {
		k := cellKey{r.Streams, r.Clusters}
		if cells[k] == nil {
			cells[k] = map[string]*Result{}
			keys = append(keys, k)
		}
		cells[k][r.Impl] = r
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].clusters != keys[j].clusters {
			return keys[i].clusters < keys[j].clusters
		}
		return keys[i].streams < keys[j].streams
	})
	return cells, keys
}

func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f×", a/b)
}

func cell(r *Result, f func(*Result) string) string {
	if r == nil {
		return "not run"
	}
	if r.Error != "" {
		return "failed"
	}
	return f(r)
}

// writeTable prints the markdown table of docs/benchmarks.md.
func writeTable(w io.Writer, run *Run) error {
	cells, keys := index(run)
	var sb strings.Builder
	sb.WriteString("| streams × clusters | go-control-plane p50 / p99 | legate p50 / p99 | speed-up p50 | gcp CPU / peak RSS | legate CPU / peak RSS |\n")
	sb.WriteString("|---|---|---|---|---|---|\n")
	for _, k := range keys {
		g, l := cells[k]["gcp"], cells[k]["legate"]
		lat := func(r *Result) string { return fmt.Sprintf("%s / %s ms", ms(r.P50Ms), ms(r.P99Ms)) }
		res := func(r *Result) string {
			return fmt.Sprintf("%.2f s / %d MiB", r.CPUSeconds, r.PeakRSSBytes>>20)
		}
		speed := "–"
		if g != nil && l != nil && g.Error == "" && l.Error == "" {
			speed = ratio(g.P50Ms, l.P50Ms)
		}
		fmt.Fprintf(&sb, "| %d × %d | %s | %s | %s | %s | %s |\n", k.streams, k.clusters,
			cell(g, lat), cell(l, lat), speed, cell(g, res), cell(l, res))
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

func ms(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// writeSVG draws p50 publish-to-all-ACKed per cell on a log scale, one bar
// per implementation, with p99 as a tick.
func writeSVG(w io.Writer, run *Run) error {
	cells, keys := index(run)
	const (
		width, height   = 860, 420
		left, right     = 70, 20
		top, bottom     = 50, 90
		barW, groupPadW = 22, 26
	)
	impls := []struct{ name, label, color string }{
		{"gcp", "go-control-plane SnapshotCache", "#c0504d"},
		{"legate", "legate xds.Server", "#4f81bd"},
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range run.Results {
		if r.Error == "" && r.P50Ms > 0 {
			lo, hi = math.Min(lo, r.P50Ms), math.Max(hi, math.Max(r.P99Ms, r.P50Ms))
		}
	}
	if math.IsInf(lo, 1) {
		return fmt.Errorf("no results to plot")
	}
	minExp, maxExp := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if maxExp == minExp {
		maxExp++
	}
	plotH := float64(height - top - bottom)
	y := func(v float64) float64 {
		return float64(top) + plotH*(1-(math.Log10(v)-minExp)/(maxExp-minExp))
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&sb, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&sb, `<text x="%d" y="22" font-size="15">xDS fan-out: publish to every stream ACKed (p50 bar, p99 tick; log scale, ms)</text>`+"\n", left)
	for e := minExp; e <= maxExp; e++ {
		yy := y(math.Pow(10, e))
		fmt.Fprintf(&sb, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, width-right, yy, yy)
		fmt.Fprintf(&sb, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, yy+4, ms(math.Pow(10, e)))
	}
	groupW := float64(len(impls)*barW + groupPadW)
	for gi, k := range keys {
		x0 := float64(left) + 10 + float64(gi)*groupW
		for ii, im := range impls {
			r := cells[k][im.name]
			if r == nil || r.Error != "" || r.P50Ms <= 0 {
				continue
			}
			x := x0 + float64(ii*barW)
			base := float64(height - bottom)
			fmt.Fprintf(&sb, `<rect x="%.1f" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s %d×%d p50 %s ms</title></rect>`+"\n",
				x, y(r.P50Ms), barW-2, base-y(r.P50Ms), im.color, html.EscapeString(im.label), k.streams, k.clusters, ms(r.P50Ms))
			fmt.Fprintf(&sb, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="black" stroke-width="2"/>`+"\n",
				x, x+float64(barW-2), y(r.P99Ms), y(r.P99Ms))
		}
		lx := x0 + float64(len(impls)*barW)/2
		fmt.Fprintf(&sb, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", lx, height-bottom+16, k.streams)
		fmt.Fprintf(&sb, `<text x="%.1f" y="%d" text-anchor="middle">×%d</text>`+"\n", lx, height-bottom+30, k.clusters)
	}
	fmt.Fprintf(&sb, `<text x="%d" y="%d">streams × clusters</text>`+"\n", left, height-bottom+50)
	for ii, im := range impls {
		lx := left + 220 + ii*260
		fmt.Fprintf(&sb, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`+"\n", lx, height-28, im.color)
		fmt.Fprintf(&sb, `<text x="%d" y="%d">%s</text>`+"\n", lx+18, height-18, html.EscapeString(im.label))
	}
	sb.WriteString("</svg>\n")
	_, err := io.WriteString(w, sb.String())
	return err
}
