package suite

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Machine is what the figures were measured on.
type Machine struct {
	Cores     int    `json:"cores"`
	MemoryGiB string `json:"memoryGiB"`
	CPU       string `json:"cpu"`
	Go        string `json:"go"`
	Commit    string `json:"commit"`
	// Components are the versions of the Kubernetes binaries, by name.
	Components map[string]string `json:"components"`
}

// Report is a whole run.
type Report struct {
	Started time.Time `json:"started"`
	Machine Machine   `json:"machine"`
	Command string    `json:"command"`
	Results []*Result `json:"results"`
}

// Merge adds the results of rep to those of an earlier report, replacing the earlier results of the scenarios
// rep ran at the same scale and keeping the others, ordered as order names them and then by scale: a run of
// some scenarios updates the report of a full run, and a scenario measured at two scales keeps both. The
// machine and command are rep's; each result keeps when and at which commit it was measured.
func (rep *Report) Merge(earlier *Report, order []string) {
	type key struct {
		scenario string
		scale    Scale
	}
	byKey := map[key]*Result{}
	for _, r := range earlier.Results {
		byKey[key{r.Scenario, r.Scale}] = r
	}
	for _, r := range rep.Results {
		byKey[key{r.Scenario, r.Scale}] = r
	}
	rep.Results = rep.Results[:0]
	for _, name := range order {
		for _, scale := range []Scale{Tiny, Small, Full} {
			if r := byKey[key{name, scale}]; r != nil {
				rep.Results = append(rep.Results, r)
			}
		}
	}
}

// ReadReport reads a report.json.
func ReadReport(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &rep, nil
}

// Write writes dir/report.md, dir/report.json and a PNG per plot, and returns the files written.
func (rep *Report) Write(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	plots := map[*Result][]string{}
	for _, r := range rep.Results {
		pngs, err := writePlots(dir, r)
		if err != nil {
			return files, fmt.Errorf("plots of %s: %w", r.Scenario, err)
		}
		plots[r] = pngs
		files = append(files, pngs...)
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return files, err
	}
	jsonPath := filepath.Join(dir, "report.json")
	if err := os.WriteFile(jsonPath, append(data, '\n'), 0o644); err != nil {
		return files, err
	}
	mdPath := filepath.Join(dir, "report.md")
	if err := os.WriteFile(mdPath, []byte(rep.markdown(dir, plots)), 0o644); err != nil {
		return files, err
	}
	return append(files, jsonPath, mdPath), nil
}

func (rep *Report) markdown(dir string, plots map[*Result][]string) string {
	var b strings.Builder
	m := rep.Machine
	fmt.Fprintf(&b, "# fedmesh benchmark report\n\n")
	fmt.Fprintf(&b, "The last run: %s on %d cores, %s GiB of memory (%s); %s; fedmesh %s.\n",
		rep.Started.UTC().Format("2006-01-02 15:04 MST"), m.Cores, m.MemoryGiB, m.CPU, m.Go, m.Commit)
	for _, name := range sortedKeys(m.Components) {
		fmt.Fprintf(&b, "%s %s; ", name, m.Components[name])
	}
	fmt.Fprintf(&b, "\n\nIts command: `%s`. Each section says when, at which commit and on which processor it "+
		"was measured. Every variant of a comparison ran interleaved (A B A B ...) in the same "+
		"run; figures are the median of the repetitions, with their range (min–max) and spread ((max−min)/median). "+
		"Ratios and differences are paired per repetition, then summarized. The benchmark's own clients have no QPS "+
		"limit, and fedmesh's binaries run with theirs raised far above what they reach, so client limits bound "+
		"nothing; each figure says what did. Every figure is in report.json.\n\n", rep.Command)
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "## %s (%s)\n\n%s\n\n", r.Scenario, r.Scale, r.Description)
		only := ""
		if len(r.Variants) > 0 {
			only = fmt.Sprintf(" of the variants %s only", strings.Join(r.Variants, ", "))
		}
		cpu := r.CPU
		if cpu == "" {
			cpu = "a processor not recorded"
		}
		fmt.Fprintf(&b, "Scale **%s**, %d repetitions%s, %.0f s, measured %s at %s on %s. Reproduce: `%s`.\n", r.Scale, r.Reps,
			only, r.Duration, r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Commit, cpu, r.Command)
		if len(r.Parameters) > 0 {
			var ps []string
			for _, k := range sortedKeys(r.Parameters) {
				ps = append(ps, fmt.Sprintf("%s=%v", k, r.Parameters[k]))
			}
			fmt.Fprintf(&b, "Parameters: %s.\n", strings.Join(ps, ", "))
		}
		b.WriteString("\n")
		if r.Error != "" {
			fmt.Fprintf(&b, "**Failed:** %s\n\n", strings.ReplaceAll(r.Error, "\n", " "))
		}
		if len(r.Comparisons) > 0 {
			b.WriteString("| comparison | median | range | spread | bar | met |\n|---|---|---|---|---|---|\n")
			for _, c := range r.Comparisons {
				met := ""
				if c.Met != nil {
					met = map[bool]string{true: "yes", false: "**no**"}[*c.Met]
				}
				what := fmt.Sprintf("%s: %s / %s", c.Metric, c.A, c.B)
				switch c.Kind {
				case "difference":
					what = fmt.Sprintf("%s: %s − %s (%s)", c.Metric, c.A, c.B, c.Unit)
				case "value":
					what = fmt.Sprintf("%s: %s (%s)", c.Metric, c.A, c.Unit)
				}
				fmt.Fprintf(&b, "| %s | %s | %s–%s | %s | %s | %s |\n", what, num(c.Median), num(c.Min), num(c.Max),
					pct(c.Spread), c.Bar, met)
			}
			b.WriteString("\n")
		}
		if len(r.Figures) > 0 {
			b.WriteString("| metric | variant | median | range | spread | unit | bounded by |\n|---|---|---|---|---|---|---|\n")
			for _, f := range r.Figures {
				fmt.Fprintf(&b, "| %s | %s | %s | %s–%s | %s | %s | %s |\n", f.Name, f.Variant, num(f.Median), num(f.Min),
					num(f.Max), pct(f.Spread), f.Unit, f.Bound)
			}
			b.WriteString("\n")
		}
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		if len(r.Notes) > 0 {
			b.WriteString("\n")
		}
		for _, p := range plots[r] {
			rel, _ := filepath.Rel(dir, p)
			fmt.Fprintf(&b, "![%s](%s)\n\n", rel, rel)
		}
	}
	return b.String()
}

// num prints x with 4 significant digits, without exponent for everyday magnitudes.
func num(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	if a := math.Abs(x); a != 0 && (a < 0.001 || a >= 1e7) {
		return fmt.Sprintf("%.3g", x)
	}
	return fmt.Sprintf("%.4g", x)
}

func pct(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }
