package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
)

// runPlot draws the commit-to-ACK latencies of every flow as cumulative
// distributions in an SVG.
func runPlot(args []string) error {
	fl := flag.NewFlagSet("plot", flag.ContinueOnError)
	in := fl.String("in", "test/bench/commit/results.json", "results file")
	out := fl.String("svg", "docs/bench-commit.svg", "SVG to write")
	if err := fl.Parse(args); err != nil {
		return err
	}
	data, err := os.ReadFile(*in)
	if err != nil {
		return err
	}
	var r Results
	if err := json.Unmarshal(data, &r); err != nil {
		return err
	}
	if len(r.Flows) == 0 {
		return errors.New("no flows in " + *in)
	}
	return os.WriteFile(*out, []byte(cdfSVG(r)), 0o644)
}

// cdfSVG plots, per flow, the share of commits ACKed within x ms (log x).
func cdfSVG(r Results) string {
	const w, h, left, right, top, bottom = 800, 360, 60, 270, 30, 50
	maxMs := 1.0
	for _, f := range r.Flows {
		for _, v := range f.Ms {
			maxMs = max(maxMs, v)
		}
	}
	lo, hi := 1.0, 1.0
	for hi < maxMs {
		hi *= 10
	}
	x := func(ms float64) float64 {
		ms = max(ms, lo)
		return left + (w-left-right)*log10(ms/lo)/log10(hi/lo)
	}
	y := func(share float64) float64 { return top + (h-top-bottom)*(1-share) }
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14">commit-to-ACK, %d routes, grpc-go xDS client (share of commits ACKed within x)</text>`+"\n", left, r.Routes)
	for d := lo; d <= hi; d *= 10 {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", x(d), top, x(d), h-bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%g ms</text>`+"\n", x(d), h-bottom+16, d)
	}
	for _, s := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y(s), w-right, y(s))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%g %%</text>`+"\n", left-6, y(s)+4, s*100)
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#888" stroke-dasharray="4 3"/>`+"\n", x(300), top, x(300), h-bottom)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#888">300 ms target</text>`+"\n", x(300)+4, top+12)
	for i, f := range r.Flows {
		s := slices.Clone(f.Ms)
		slices.Sort(s)
		var pts []string
		for j, v := range s {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", x(v), y(float64(j)/float64(len(s))), x(v), y(float64(j+1)/float64(len(s)))))
		}
		c := colors[i%len(colors)]
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		ly := top + 20 + 36*i
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", w-right+10, ly, w-right+30, ly, c)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", w-right+34, ly+4, f.Name)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">p50 %.0f ms, p99 %.0f ms</text>`+"\n", w-right+34, ly+18, f.P50, f.P99)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func log10(v float64) float64 { return math.Log10(v) }
