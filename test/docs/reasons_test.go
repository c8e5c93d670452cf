package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The reasons operations.md explains are the reasons fedmesh gives: a renamed or removed reason fails here, not in
// front of a user looking it up.
func TestNotReadyReasonsExist(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root(), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "## When something is not ready")
	if !ok {
		t.Fatal(`docs/operations.md has no "When something is not ready" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	reasonCell := regexp.MustCompile("`([A-Z][A-Za-z]+)`")
	var reasons []string
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		for _, m := range reasonCell.FindAllStringSubmatch(cells[2], -1) {
			reasons = append(reasons, m[1])
		}
	}
	if len(reasons) < 20 {
		t.Fatalf("found %d reasons in the table; expected the whole table", len(reasons))
	}
	var source strings.Builder
	err = filepath.WalkDir(filepath.Join(root(), "pkg"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		source.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reasons {
		if !strings.Contains(source.String(), `"`+r+`"`) {
			t.Errorf("docs/operations.md explains reason %s, which no code in pkg/ gives", r)
		}
	}
}
