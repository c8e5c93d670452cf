package binding

import (
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// editedOrDeleted passes the changes of a Work this stage undoes: its spec edited (generation, which deletion
// raises too) and the Work gone. Its creation is this stage's own doing, and its status the other stages': except
// while its cluster has a turn in a paced rollout (names.RolloutPhaseAnnotation), when what the member reports
// may end the turn and start the next cluster's.
var editedOrDeleted = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
			return true
		}
		return e.ObjectNew.GetAnnotations()[names.RolloutPhaseAnnotation] != "" &&
			e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion()
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
}
