package helm

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fedmesh/fedmesh/test/fedrun"
)

// Every fedmesh metric the Grafana dashboard queries is one a fedmesh binary registers: a renamed or misspelt
// series would leave a panel silently empty.
func TestDashboardQueriesRegisteredMetrics(t *testing.T) {
	dashboard, err := os.ReadFile(filepath.Join(ChartDir(), "dashboards", "fedmesh.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sources strings.Builder
	root := fedrun.SourceRoot()
	for _, dir := range []string{"pkg", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			data, err := os.ReadFile(path)
			sources.Write(data)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	names := regexp.MustCompile(`fedmesh_[a-z_]+`).FindAllString(string(dashboard), -1)
	if len(names) == 0 {
		t.Fatal("the dashboard queries no fedmesh metric")
	}
	for _, name := range names {
		base := name
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			base = strings.TrimSuffix(base, suffix)
		}
		if !strings.Contains(sources.String(), `"`+base+`"`) {
			t.Errorf("the dashboard queries %s, which no fedmesh binary registers", name)
		}
	}
}
