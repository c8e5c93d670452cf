package labelmode

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestWithOwner(t *testing.T) {
	role := func(name, uid string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: name, UID: types.UID(uid)}
	}
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "keep", UID: "c1"}
	current := role("fedmesh-manager", "u2")
	for _, tc := range []struct {
		name  string
		refs  []metav1.OwnerReference
		owner *metav1.OwnerReference
		want  []metav1.OwnerReference
	}{
		{"an older manager's registration gets the owner", nil, &current, []metav1.OwnerReference{current}},
		{"already owned: unchanged", []metav1.OwnerReference{current}, &current, []metav1.OwnerReference{current}},
		{"the owner created again: its new UID replaces the old", []metav1.OwnerReference{role("fedmesh-manager", "u1")}, &current,
			[]metav1.OwnerReference{current}},
		{"a renamed owner replaces the one before", []metav1.OwnerReference{role("old-manager", "u0")}, &current,
			[]metav1.OwnerReference{current}},
		{"another kind's reference is kept", []metav1.OwnerReference{other}, &current, []metav1.OwnerReference{other, current}},
		{"no owner: a dangling reference goes", []metav1.OwnerReference{role("fedmesh-manager", "u1"), other}, nil,
			[]metav1.OwnerReference{other}},
		{"no owner, none before", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := withOwner(tc.refs, tc.owner); !equality.Semantic.DeepEqual(got, tc.want) {
				t.Fatalf("withOwner = %+v, want %+v", got, tc.want)
			}
		})
	}
}
