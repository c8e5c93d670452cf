package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of this package.
const GroupName = "work.fedmesh.io"

var (
	// GroupVersion is the group and version of this package's types.
	GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

	// SchemeGroupVersion is GroupVersion under the name client-go's generators expect.
	SchemeGroupVersion = GroupVersion

	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme registers this package's types with a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

// Resource qualifies a resource name (plural, lower case) with this package's group.
func Resource(resource string) schema.GroupResource {
	return GroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&ResourceBinding{}, &ResourceBindingList{},
		&Work{}, &WorkList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
