package apis

import (
	"k8s.io/apimachinery/pkg/runtime"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
	meshv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/mesh/v1alpha1"
	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

var schemeBuilder = runtime.NewSchemeBuilder(
	meshv1alpha1.AddToScheme,
	policyv1alpha1.AddToScheme,
	workv1alpha1.AddToScheme,
	clusterv1alpha1.AddToScheme,
	configv1alpha1.AddToScheme,
)

// AddToScheme registers the types of every fedmesh API group with a scheme.
var AddToScheme = schemeBuilder.AddToScheme
