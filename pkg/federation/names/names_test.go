package names

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	// A Cluster's name may be 253 characters long: with a short binding, the Work's name is the binding's and a
	// hash.
	longCluster := strings.Repeat("c", 240)
	n := Work("web-deployment", longCluster)
	if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 || !strings.HasPrefix(n, "web-deployment-") || n == Work("web-deployment", longCluster+"d") {
		t.Errorf("a long cluster's Work %q: %v", n, errs)
	}
}

// TestDistinctWork: the pairs that share a plain Work name get distinct names of their own, valid, readable and
// the same every time, at every length.
func TestDistinctWork(t *testing.T) {
	long := strings.Repeat("b", 240)
	for _, tc := range []struct{ a, b [2]string }{
		{[2]string{"deployment-web", "us-east"}, [2]string{"deployment-web-us", "east"}},
		{[2]string{long, "us-east"}, [2]string{long + "-us", "east"}},
		{[2]string{"web", "x-" + strings.Repeat("c", 240)}, [2]string{"web-x", strings.Repeat("c", 240)}},
	} {
		if Work(tc.a[0], tc.a[1]) != Work(tc.b[0], tc.b[1]) {
			t.Fatalf("%v and %v do not share a plain name", tc.a, tc.b)
		}
		da, db := DistinctWork(tc.a[0], tc.a[1]), DistinctWork(tc.b[0], tc.b[1])
		plain := Work(tc.a[0], tc.a[1])
		if da == db || da == plain || db == plain {
			t.Errorf("%v and %v: distinct names %q and %q, plain %q", tc.a, tc.b, da, db, plain)
		}
		for _, n := range []string{da, db} {
			if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
				t.Errorf("%q: %v", n, errs)
			}
		}
		if da != DistinctWork(tc.a[0], tc.a[1]) {
			t.Errorf("%v: not the same name twice", tc.a)
		}
	}
	if got := DistinctWork("deployment-web", "us-east"); !strings.HasPrefix(got, "deployment-web-") || !strings.HasSuffix(got, "-us-east") ||
		len(got) != len("deployment-web-us-east")+9 {
		t.Errorf("unreadable distinct name %q", got)
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

// TestAppliedIdentity marks member objects as Works of every length would, and reads the Work back from the marks
// (as the status stage does), from the marks of objects applied before long names were shortened, and from marks
// a handover left inconsistent.
func TestAppliedIdentity(t *testing.T) {
	const issue = "checkout-frontend-canary-v2-deployment-member-eu-west-1-production" // 66 characters
	longest := Work(strings.Repeat("b", 240), "member-eu-west-1-production")
	if len(issue) != 66 || len(longest) != validation.DNS1123SubdomainMaxLength {
		t.Fatalf("test names are %d and %d characters", len(issue), len(longest))
	}
	for _, name := range []string{"web-deployment-member1", strings.Repeat("c", 63), issue, longest} {
		l, a := AppliedLabels("shop", name), AppliedAnnotations(name)
		for k, v := range l {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Errorf("%s: label %s=%q: %v", name, k, v, errs)
			}
		}
		if short := len(name) <= validation.LabelValueMaxLength; short != (a == nil) || (short && l[WorkNameLabel] != name) {
			t.Errorf("%s (%d characters): labels %v annotations %v", name, len(name), l, a)
		}
		obj := &metav1.ObjectMeta{Labels: l, Annotations: a}
		if got, ok := AppliedFrom(obj); !ok || got != (types.NamespacedName{Namespace: "shop", Name: name}) {
			t.Errorf("%s: read back as %v, %v", name, got, ok)
		}
	}
	if LabelValue(issue) == LabelValue(issue[:65]+"x") {
		t.Error("two long Work names share a label value")
	}

	for _, tc := range []struct {
		name        string
		labels      map[string]string
		annotations map[string]string
		want        string // "" when no Work is named
	}{
		{"applied before names were shortened", map[string]string{WorkNamespaceLabel: "shop", WorkNameLabel: "web-member1"}, nil, "web-member1"},
		{"a short Work's, after a long one's handover left its annotation",
			map[string]string{WorkNamespaceLabel: "shop", WorkNameLabel: "web-member1"}, AppliedAnnotations(issue), "web-member1"},
		{"a long Work's without its annotation", map[string]string{WorkNamespaceLabel: "shop", WorkNameLabel: LabelValue(issue)}, nil, LabelValue(issue)},
		{"no namespace", map[string]string{WorkNameLabel: "web-member1"}, nil, ""},
		{"not fedmesh's", map[string]string{"app": "web"}, AppliedAnnotations(issue), ""},
	} {
		got, ok := AppliedFrom(&metav1.ObjectMeta{Labels: tc.labels, Annotations: tc.annotations})
		if ok != (tc.want != "") || got.Name != tc.want {
			t.Errorf("%s: got %v, %v; want %q", tc.name, got, ok, tc.want)
		}
	}
}
