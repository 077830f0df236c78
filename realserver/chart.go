package main

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// chart draws, as SVG, the limit of each contender that has one over the
// run, second by second, with the phases marked.
func chart(sc scenario, names []string, limits [][]float64) []byte {
	const w, h, left, bottom, top = 760.0, 300.0, 40.0, 30.0, 10.0
	n := len(limits[0])
	top2 := 0.0
	for _, l := range limits {
		for _, v := range l {
			top2 = max(top2, v)
		}
	}
	ymax := math.Max(10, math.Ceil(top2/10)*10)
	x := func(i float64) float64 { return left + i*(w-left-10)/float64(n) }
	y := func(v float64) float64 { return h - bottom - v*(h-bottom-top)/ymax }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for v := 0.0; v <= ymax; v += ymax / 5 {
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" text-anchor="end">%.0f</text>`+"\n",
			left, w-10, y(v), y(v), left-4, y(v)+4, v)
	}
	at := 0.0
	for _, p := range sc.phases {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="#999" stroke-dasharray="3,3"/>`+"\n", x(at), x(at), top, h-bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" font-size="9">%s</text>`+"\n", x(at)+2, h-bottom+12, escape(p.name))
		at += p.d.Seconds()
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">the limit, read every second (%s)</text>`+"\n", left+4, top+12, escape(sc.name))
	colors := []string{"#1f77b4", "#2ca02c", "#d62728", "#9467bd"}
	k := 0
	for i, l := range limits {
		var pts []string
		for s, v := range l {
			if v > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(s)+0.5), y(v)))
			}
		}
		if len(pts) == 0 {
			continue
		}
		c := colors[i%len(colors)]
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="%s">%s</text>`+"\n", w-160, top+12+float64(k)*13, c, escape(names[i]))
		k++
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end">%v</text></svg>`+"\n", w-10, h-4, sc.length().Round(time.Second))
	return []byte(b.String())
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
