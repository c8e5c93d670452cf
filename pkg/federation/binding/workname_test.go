package binding

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

func TestWorkName(t *testing.T) {
	const binding, cluster = "deployment-web-us", "east"
	plain, distinct := names.Work(binding, cluster), names.DistinctWork(binding, cluster)
	if plain != names.Work("deployment-web", "us-east") {
		t.Fatalf("the test's names do not collide: %q", plain)
	}
	controlled := func(w *workv1alpha1.Work, by string) *workv1alpha1.Work {
		w.OwnerReferences = []metav1.OwnerReference{{APIVersion: workv1alpha1.GroupVersion.String(), Kind: "ResourceBinding", Name: by, Controller: new(true)}}
		return w
	}
	work := func(b, c string) *workv1alpha1.Work {
		return &workv1alpha1.Work{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{names.BindingLabel: names.LabelValue(b), names.ClusterLabel: names.LabelValue(c)}},
			Spec:       workv1alpha1.WorkSpec{ClusterName: c},
		}
	}
	for _, tc := range []struct {
		name    string
		held    map[string]*workv1alpha1.Work
		want    string
		wantErr error
	}{
		{"free", nil, plain, nil},
		{"its own, not listed yet", map[string]*workv1alpha1.Work{plain: controlled(work(binding, cluster), binding)}, plain, nil},
		{"its own, before owner references", map[string]*workv1alpha1.Work{plain: work(binding, cluster)}, plain, nil},
		{"another binding's", map[string]*workv1alpha1.Work{plain: controlled(work("deployment-web", "us-east"), "deployment-web")}, distinct, nil},
		{"labelled as its, for another cluster", map[string]*workv1alpha1.Work{plain: work(binding, "west")}, distinct, nil},
		{"labelled as its, controlled by another binding", map[string]*workv1alpha1.Work{plain: controlled(work(binding, cluster), "deployment-web")}, distinct, nil},
		{"unlabelled", map[string]*workv1alpha1.Work{plain: {Spec: workv1alpha1.WorkSpec{ClusterName: cluster}}}, distinct, nil},
		{"both held", map[string]*workv1alpha1.Work{plain: work("a", cluster), distinct: work("b", cluster)}, "", errNamesHeld},
		{"only the other name held", map[string]*workv1alpha1.Work{distinct: work("b", cluster)}, plain, nil},
	} {
		got, err := workName(binding, cluster, func(name string) (*workv1alpha1.Work, error) { return tc.held[name], nil })
		if got != tc.want || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
			t.Errorf("%s: %q, %v; want %q, %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
	boom := errors.New("boom")
	if _, err := workName(binding, cluster, func(string) (*workv1alpha1.Work, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("a failed read: %v", err)
	}
}
