package e2e

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// `make demo`'s program, run to the end: the example app is divided 4/2 with member1's image overridden, the
// ConfigMap reaches both members, the aggregated status shows all 6 replicas ready, and kubectl-fedmesh list shows
// the pods running in each member.
func TestDemoPropagatesTheExampleApp(t *testing.T) {
	cmd := exec.Command("go", "run", "./test/demo", "--exit")
	cmd.Dir = sourceRoot(t)
	out, err := cmd.CombinedOutput()
	text := string(out)
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, text)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`member1\s+4\s+4\s+mirror\.member1\.example/shop/web:1\.0\s+web-config`),
		regexp.MustCompile(`member2\s+2\s+2\s+registry\.example/shop/web:1\.0\s+web-config`),
		regexp.MustCompile(`member1\s+true\s+Healthy`),
		regexp.MustCompile(`member2\s+true\s+Healthy`),
		regexp.MustCompile(`template demo/web in the host: replicas 6, ready 6`),
		regexp.MustCompile(`(?m)^member1\s+web-\S+\s+1/1\s+Running`),
		regexp.MustCompile(`(?m)^member2\s+web-\S+\s+1/1\s+Running`),
	} {
		if !want.MatchString(text) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
	if !strings.Contains(text, "nothing left behind") {
		t.Errorf("demo did not stop cleanly:\n%s", text)
	}
}
