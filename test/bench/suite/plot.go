package suite

import (
	"fmt"
	"image/color"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// writePlots draws a scenario's ratios as bars (with their range as error bars and a line at 1) and each group
// of series as lines against their parameter, one PNG each named by scenario and scale, and returns the files.
func writePlots(dir string, r *Result) ([]string, error) {
	var files []string
	var ratios []Comparison
	for _, c := range r.Comparisons {
		if c.Kind == "ratio" {
			ratios = append(ratios, c)
		}
	}
	if len(ratios) > 0 {
		path := filepath.Join(dir, r.Scenario+"-"+string(r.Scale)+"-ratios.png")
		if err := ratioPlot(path, r.Scenario+" ("+string(r.Scale)+")", ratios); err != nil {
			return files, err
		}
		files = append(files, path)
	}
	groups := map[string][]Series{}
	for _, s := range r.Series {
		groups[s.Group] = append(groups[s.Group], s)
	}
	for _, g := range sortedKeys(groups) {
		path := filepath.Join(dir, r.Scenario+"-"+string(r.Scale)+"-"+g+".png")
		if err := seriesPlot(path, r.Scenario+" ("+string(r.Scale)+"): "+g, groups[g]); err != nil {
			return files, err
		}
		files = append(files, path)
	}
	return files, nil
}

func ratioPlot(path, title string, cs []Comparison) error {
	p := plot.New()
	p.Title.Text = title + ": ratios (median, range)"
	p.Y.Label.Text = "ratio"
	values := make(plotter.Values, len(cs))
	errs := make(plotter.YErrors, len(cs))
	var labels []string
	for i, c := range cs {
		values[i] = c.Median
		errs[i].Low, errs[i].High = c.Median-c.Min, c.Max-c.Median
		labels = append(labels, fmt.Sprintf("%s\n%s ÷ %s", c.Metric, c.A, c.B))
	}
	bars, err := plotter.NewBarChart(values, vg.Points(18))
	if err != nil {
		return err
	}
	bars.Color = color.RGBA{R: 70, G: 120, B: 190, A: 255}
	p.Add(bars)
	type xyErr struct {
		plotter.XYs
		plotter.YErrors
	}
	pts := xyErr{XYs: make(plotter.XYs, len(cs)), YErrors: errs}
	for i := range cs {
		pts.XYs[i] = plotter.XY{X: float64(i), Y: values[i]}
	}
	eb, err := plotter.NewYErrorBars(pts)
	if err != nil {
		return err
	}
	p.Add(eb)
	one := plotter.NewFunction(func(float64) float64 { return 1 })
	one.Color = color.RGBA{R: 200, A: 255}
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	p.Add(one)
	p.NominalX(labels...)
	p.X.Tick.Label.Font.Size = vg.Points(8)
	p.Y.Min = 0
	return p.Save(vg.Length(max(6, 1.7*float64(len(cs))))*vg.Inch, 4.5*vg.Inch, path)
}

func seriesPlot(path, title string, ss []Series) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = ss[0].XLabel
	p.Y.Label.Text = ss[0].YLabel
	p.Legend.Top = true
	for i, s := range ss {
		xys := make(plotter.XYs, len(s.Points))
		for j, pt := range s.Points {
			xys[j] = plotter.XY{X: pt.X, Y: pt.Median}
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(i)
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		p.Legend.Add(s.Name, line, points)
	}
	p.Y.Min = 0
	return p.Save(7*vg.Inch, 4.5*vg.Inch, path)
}
