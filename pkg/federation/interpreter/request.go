package interpreter

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
)

// Request is one operation with its inputs, as the offline CLI and the fixture tests give it.
type Request struct {
	// Operation to run.
	Operation Operation `json:"operation"`

	// DesiredObj is the template (or the object about to be applied, for Retain).
	DesiredObj *unstructured.Unstructured `json:"desiredObj,omitempty"`

	// ObservedObj is the object as it is in a member cluster.
	ObservedObj *unstructured.Unstructured `json:"observedObj,omitempty"`

	// StatusItems are the per-cluster statuses, for AggregateStatus.
	StatusItems []workv1alpha1.AggregatedStatusItem `json:"statusItems,omitempty"`

	// InputReplicas is the cluster's share, for ReviseReplica.
	InputReplicas int32 `json:"inputReplicas,omitempty"`
}

// Result holds what an operation returned, under the key the CLI prints it with; only the operation's keys are set.
type Result struct {
	Replica          *int32                            `json:"replica,omitempty"`
	Requires         *workv1alpha1.ReplicaRequirements `json:"requires,omitempty"`
	Components       []Component                       `json:"components,omitzero"`
	Revised          *unstructured.Unstructured        `json:"revised,omitempty"`
	Retained         *unstructured.Unstructured        `json:"retained,omitempty"`
	Status           *runtime.RawExtension             `json:"status,omitempty"`
	AggregatedStatus *unstructured.Unstructured        `json:"aggregatedStatus,omitempty"`
	Healthy          *bool                             `json:"healthy,omitempty"`
	Dependencies     []DependentObjectReference        `json:"dependencies,omitzero"`
}

// Object is the single object an operation on one object takes: DesiredObj or ObservedObj, whichever is set.
func (r *Request) Object() (*unstructured.Unstructured, error) {
	switch {
	case r.DesiredObj != nil && r.ObservedObj != nil:
		return nil, fmt.Errorf("%s takes one object: give desiredObj or observedObj, not both", r.Operation)
	case r.DesiredObj != nil:
		return r.DesiredObj, nil
	case r.ObservedObj != nil:
		return r.ObservedObj, nil
	default:
		return nil, fmt.Errorf("%s needs an object: give desiredObj or observedObj", r.Operation)
	}
}

// Do runs r against i.
func Do(ctx context.Context, i Interpreter, r *Request) (*Result, error) {
	var res Result
	var err error
	switch r.Operation {
	case Retain:
		if r.DesiredObj == nil || r.ObservedObj == nil {
			return nil, fmt.Errorf("%s needs desiredObj and observedObj", r.Operation)
		}
		res.Retained, err = i.Retain(ctx, r.DesiredObj, r.ObservedObj)
	case AggregateStatus:
		if r.DesiredObj == nil {
			return nil, fmt.Errorf("%s needs desiredObj", r.Operation)
		}
		res.AggregatedStatus, err = i.AggregateStatus(ctx, r.DesiredObj, r.StatusItems)
	case InterpretReplica, InterpretComponent, ReviseReplica, InterpretStatus, InterpretHealth, InterpretDependency:
		obj, oerr := r.Object()
		if oerr != nil {
			return nil, oerr
		}
		err = doOne(ctx, i, r, obj, &res)
	default:
		return nil, fmt.Errorf("unknown operation %q", r.Operation)
	}
	if err != nil {
		return nil, err
	}
	return &res, nil
}

func doOne(ctx context.Context, i Interpreter, r *Request, obj *unstructured.Unstructured, res *Result) error {
	var err error
	switch r.Operation {
	case InterpretReplica:
		var n int32
		n, res.Requires, err = i.InterpretReplica(ctx, obj)
		res.Replica = &n
	case InterpretComponent:
		var cs []Component
		cs, err = i.InterpretComponent(ctx, obj)
		res.Components = append([]Component{}, cs...)
	case ReviseReplica:
		res.Revised, err = i.ReviseReplica(ctx, obj, r.InputReplicas)
	case InterpretStatus:
		res.Status, err = i.InterpretStatus(ctx, obj)
	case InterpretHealth:
		var healthy bool
		healthy, err = i.InterpretHealth(ctx, obj)
		res.Healthy = &healthy
	case InterpretDependency:
		var deps []DependentObjectReference
		deps, err = i.InterpretDependency(ctx, obj)
		res.Dependencies = append([]DependentObjectReference{}, deps...)
	}
	return err
}
