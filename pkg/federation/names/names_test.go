package names

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestNames(t *testing.T) {
	long := strings.Repeat("a", 250)
	for _, tc := range []struct{ got, want string }{
		{Binding("Deployment", "web"), "web-deployment"},
		{Work("web-deployment", "member1"), "web-deployment-member1"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	a, b := Work(long, "member1"), Work(long, "member2")
	if a == b {
		t.Errorf("long names collide: %q", a)
	}
	for _, n := range []string{a, b, Binding("Deployment", long)} {
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			t.Errorf("%q: %v", n, errs)
		}
		if !strings.HasSuffix(n, "member1") && !strings.HasSuffix(n, "member2") && !strings.HasSuffix(n, "deployment") {
			t.Errorf("%q lost its readable suffix", n)
		}
	}
}

func TestLabelValue(t *testing.T) {
	if got := LabelValue("web-deployment"); got != "web-deployment" {
		t.Errorf("short name changed: %q", got)
	}
	long := strings.Repeat("a", 100)
	a, b := LabelValue(long+"x"), LabelValue(long+"y")
	if a == b || len(a) > 63 || !strings.HasPrefix(a, "aaaa") {
		t.Errorf("long names: %q %q", a, b)
	}
	if errs := validation.IsValidLabelValue(a); len(errs) > 0 {
		t.Errorf("%q: %v", a, errs)
	}
}
