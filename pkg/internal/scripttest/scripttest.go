// Package scripttest replays scripted tests, in the manner of etcd raft's: each testdata/*.txt file is a sequence
// of commands, each followed by the lines it printed ("> ..."). A test compares what the commands print now with
// the file; -rewrite writes what they print now into the file, so a change of behaviour is reviewed as a diff.
// Lines that are empty or start with "#" are kept as they are.
package scripttest

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output in testdata/*.txt scripts")

// Runner runs one command (at line of its file) and returns the lines it prints.
type Runner func(line int, cmd string) []string

// Run replays every testdata/*.txt of the package under test, each in a subtest with a fresh Runner.
func Run(t *testing.T, newRunner func(t *testing.T, file string) Runner) {
	t.Helper()
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			run := newRunner(t, file)
			var want, got strings.Builder
			for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
				want.WriteString(line + "\n")
				if strings.HasPrefix(line, ">") {
					continue
				}
				got.WriteString(line + "\n")
				if cmd := strings.TrimSpace(line); cmd != "" && !strings.HasPrefix(cmd, "#") {
					for _, out := range run(i+1, cmd) {
						got.WriteString("> " + out + "\n")
					}
				}
			}
			if *rewrite {
				if err := os.WriteFile(file, []byte(got.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			} else if got.String() != want.String() {
				t.Errorf("%s: output differs (run with -rewrite and read the diff):\n%s", file, got.String())
			}
		})
	}
}
