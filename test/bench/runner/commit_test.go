package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommitIgnoresTheReportDirectory: a run writing its report over an earlier one's does not call the commit
// it measured dirty; a change to anything else does.
func TestCommitIgnoresTheReportDirectory(t *testing.T) {
	root := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q")
	write("main.go", "package main\n")
	write("bench/report.md", "old\n")
	git("add", ".")
	git("commit", "-q", "-m", "first")

	write("bench/report.md", "new\n")
	if got := commit(root, filepath.Join(root, "bench")); got == "" || strings.HasSuffix(got, "-dirty") {
		t.Errorf("with only the report rewritten: %q, want the commit, clean", got)
	}
	write("main.go", "package main // changed\n")
	if got := commit(root, filepath.Join(root, "bench")); !strings.HasSuffix(got, "-dirty") {
		t.Errorf("with a source file changed: %q, want -dirty", got)
	}
}
