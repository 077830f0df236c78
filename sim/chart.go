package main

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// drawContention draws the contention scenario's two charts: calls and time
// to completion against the number of clients, one line per strategy.
func drawContention(dir, format string, t contentionTable) error {
	// Calls per client on a log scale: on a linear scale of total calls the
	// jittered strategies, within a few percent of each other, draw one line.
	calls := newPlot("Contention: work done", "clients (N)", "calls (writes) per client, mean per run (log scale)")
	calls.Y.Scale = plot.LogScale{}
	calls.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	times := newPlot("Contention: time until every client succeeded", "clients (N)", "seconds, mean per run (log scale)")
	times.Y.Scale = plot.LogScale{}
	times.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	for s, name := range t.Strategies {
		cxy, txy := make(plotter.XYs, len(t.N)), make(plotter.XYs, len(t.N))
		for n, size := range t.N {
			cxy[n] = plotter.XY{X: float64(size), Y: t.Calls[s][n] / float64(size)}
			txy[n] = plotter.XY{X: float64(size), Y: max(t.Time[s][n].Seconds(), 1e-3)}
		}
		if err := addLinePoints(calls, name, s, cxy); err != nil {
			return err
		}
		if err := addLinePoints(times, name, s, txy); err != nil {
			return err
		}
	}
	// Room above the lines for the legend (the time axis is logarithmic).
	calls.Y.Max *= 4
	times.Y.Max *= 8
	if err := save(calls, chartPath(dir, "contention-calls", format), 16*vg.Centimeter, 11*vg.Centimeter); err != nil {
		return err
	}
	return save(times, chartPath(dir, "contention-time", format), 16*vg.Centimeter, 11*vg.Centimeter)
}

// drawOutage draws the outage scenario: one panel per policy, with the load
// on the server and the requests completed per second over time, in the
// chart name.
func drawOutage(dir, name, format string, cfg outageConfig, results []outageResult) error {
	perSecond := 1 / cfg.Bucket.Seconds()
	top := cfg.Capacity
	for _, r := range results {
		for _, n := range r.Load {
			top = max(top, float64(n)*perSecond)
		}
	}
	top = math.Ceil(top*1.3/500) * 500 // room for the legend, and round ticks
	cols := 2
	rows := (len(results) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, r := range results {
		p := newPlot(r.Policy, "seconds", "per second")
		p.Y.Min, p.Y.Max = 0, top
		p.X.Min, p.X.Max = 0, cfg.Duration.Seconds()
		series := func(counts []int) plotter.XYs {
			xy := make(plotter.XYs, len(counts))
			for b, n := range counts {
				xy[b] = plotter.XY{X: (float64(b) + 0.5) * cfg.Bucket.Seconds(), Y: float64(n) * perSecond}
			}
			return xy
		}
		if err := addLine(p, "calls at server", 0, series(r.Load)); err != nil {
			return err
		}
		if err := addLine(p, "requests succeeded", 1, series(r.Succeeded)); err != nil {
			return err
		}
		addRule(p, "offered load", cfg.offered(), palette[6])
		addRule(p, "capacity", cfg.Capacity, palette[3])
		addMark(p, cfg.OutageStart.Seconds(), top)
		addMark(p, cfg.recovery().Seconds(), top)
		if cfg.Refuse > 0 && cfg.Refuse < 1 {
			p.Title.Text = fmt.Sprintf("%s: %.2f× in the brownout, %.1f%% failed", r.Policy, r.outageLoad(cfg)/cfg.offered(), failedShare(r))
		} else {
			p.Title.Text = fmt.Sprintf("%s: peak %.2f×, %s", r.Policy, r.Peak, drainText(r, cfg))
		}
		plots[i/cols][i%cols] = p
	}
	w, h := 28*vg.Centimeter, vg.Length(rows)*10*vg.Centimeter
	c, wt := newCanvas(format, w, h)
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Centimeter / 2, PadY: vg.Centimeter / 2,
		PadTop: vg.Centimeter / 4, PadBottom: vg.Centimeter / 4, PadLeft: vg.Centimeter / 4, PadRight: vg.Centimeter / 4}
	canvases := plot.Align(plots, tiles, dc)
	for j := range plots {
		for i, p := range plots[j] {
			if p != nil {
				p.Draw(canvases[j][i])
			}
		}
	}
	return writeFile(chartPath(dir, name, format), wt)
}

func drainText(r outageResult, cfg outageConfig) string {
	if !r.Drained {
		return fmt.Sprintf("not drained %.0f s after recovery", (cfg.Duration - cfg.recovery()).Seconds())
	}
	return fmt.Sprintf("drained %.1f s after recovery", r.Drain.Seconds())
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	p.X.Tick.Marker, p.Y.Tick.Marker = plainTicks, plainTicks
	return p
}

// palette holds the Okabe-Ito colours, told apart by colour-blind readers.
var palette = []color.Color{
	color.RGBA{R: 0xD5, G: 0x5E, A: 0xFF},          // vermillion
	color.RGBA{G: 0x72, B: 0xB2, A: 0xFF},          // blue
	color.RGBA{R: 0xE6, G: 0x9F, A: 0xFF},          // orange
	color.RGBA{G: 0x9E, B: 0x73, A: 0xFF},          // bluish green
	color.RGBA{R: 0xCC, G: 0x79, B: 0xA7, A: 0xFF}, // reddish purple
	color.RGBA{R: 0x56, G: 0xB4, B: 0xE9, A: 0xFF}, // sky blue
	color.RGBA{R: 0x60, G: 0x60, B: 0x60, A: 0xFF}, // grey
}

// addLine adds a line in the i-th colour of the palette.
func addLine(p *plot.Plot, name string, i int, xy plotter.XYs) error {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	l.Color = palette[i%len(palette)]
	l.Width = vg.Points(1.5)
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// addLinePoints adds a line with a marker at each point, in the i-th colour
// and shape, so lines that run together can still be told apart.
func addLinePoints(p *plot.Plot, name string, i int, xy plotter.XYs) error {
	l, pts, err := plotter.NewLinePoints(xy)
	if err != nil {
		return err
	}
	c := palette[i%len(palette)]
	l.Color, l.Width = c, vg.Points(1.2)
	pts.Color, pts.Shape, pts.Radius = c, plotutil.Shape(i), vg.Points(2.5)
	p.Add(l, pts)
	p.Legend.Add(name, l, pts)
	return nil
}

// addRule adds a dashed horizontal line at y.
func addRule(p *plot.Plot, name string, y float64, c color.Color) {
	l, _ := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: y}, {X: p.X.Max, Y: y}})
	l.Color = c
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(l)
	p.Legend.Add(name, l)
}

// addMark adds a dotted vertical line at x (the outage's start or end).
func addMark(p *plot.Plot, x, top float64) {
	l, _ := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top}})
	l.Color = color.RGBA{R: 180, A: 255}
	l.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
	p.Add(l)
}

func save(p *plot.Plot, path string, w, h vg.Length) error {
	c, wt := newCanvas(fileFormat(path), w, h)
	p.Draw(draw.New(c))
	return writeFile(path, wt)
}

func fileFormat(path string) string {
	if len(path) > 4 && path[len(path)-4:] == ".svg" {
		return "svg"
	}
	return "png"
}

// newCanvas returns a canvas of the given format and what writes it out.
func newCanvas(format string, w, h vg.Length) (vg.CanvasSizer, io.WriterTo) {
	if format == "svg" {
		c := vgsvg.New(w, h)
		return c, c
	}
	c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110))
	return c, vgimg.PngCanvas{Canvas: c}
}

func writeFile(path string, wt io.WriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := wt.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// plainTicks are the default ticks, labelled without needless decimals.
var plainTicks = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
		}
	}
	return ticks
})
