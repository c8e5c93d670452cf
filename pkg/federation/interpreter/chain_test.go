package interpreter_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
)

// fake answers InterpretReplica and InterpretHealth for the kinds it lists, with fixed values.
type fake struct {
	interpreter.Interpreter // nil: other operations are not called
	kinds                   map[string]bool
	replicas                int32
	healthy                 bool
}

func (f *fake) Handles(gvk schema.GroupVersionKind, op interpreter.Operation) bool {
	return f.kinds[gvk.Kind] && (op == interpreter.InterpretReplica || op == interpreter.InterpretHealth)
}

func (f *fake) InterpretReplica(context.Context, *unstructured.Unstructured) (int32, *workv1alpha1.ReplicaRequirements, error) {
	return f.replicas, nil, nil
}

func (f *fake) InterpretHealth(context.Context, *unstructured.Unstructured) (bool, error) {
	return f.healthy, nil
}

func object(apiVersion, kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName("x")
	return u
}

func TestChainFirstHandlerAnswers(t *testing.T) {
	custom := &fake{kinds: map[string]bool{"CloneSet": true, "Deployment": true}, replicas: 42}
	chain := interpreter.Layers{Customization: custom, Native: native.New()}.Chain()
	ctx := context.Background()

	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want int32
	}{
		{"customization overrides native", object("apps/v1", "Deployment"), 42},
		{"customization for a CRD", object("apps.kruise.io/v1alpha1", "CloneSet"), 42},
		{"native answers the rest", object("apps/v1", "StatefulSet"), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := chain.InterpretReplica(ctx, tt.obj)
			if err != nil || got != tt.want {
				t.Fatalf("InterpretReplica = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestChainUnsupported(t *testing.T) {
	chain := interpreter.NewChain(native.New())
	obj := object("example.com/v1", "Widget")
	_, err := chain.InterpretHealth(context.Background(), obj)
	var ue *interpreter.UnsupportedError
	if !errors.Is(err, interpreter.ErrUnsupported) || !errors.As(err, &ue) || ue.GVK.Kind != "Widget" ||
		ue.Operation != interpreter.InterpretHealth {
		t.Fatalf("err = %v, want an UnsupportedError for Widget InterpretHealth", err)
	}
	if chain.Handles(obj.GroupVersionKind(), interpreter.InterpretHealth) {
		t.Error("Handles = true for an unknown kind")
	}
	if _, err := chain.InterpretComponent(context.Background(), object("apps/v1", "Deployment")); !errors.Is(err, interpreter.ErrUnsupported) {
		t.Errorf("InterpretComponent err = %v, want ErrUnsupported", err)
	}
	if _, err := interpreter.NewChain().Retain(context.Background(), obj, obj); !errors.Is(err, interpreter.ErrUnsupported) {
		t.Errorf("empty chain err = %v, want ErrUnsupported", err)
	}
}

func TestChainsNest(t *testing.T) {
	inner := interpreter.NewChain(&fake{kinds: map[string]bool{"A": true}, replicas: 3})
	outer := interpreter.NewChain(&fake{kinds: map[string]bool{"B": true}, replicas: 5}, inner)
	for kind, want := range map[string]int32{"A": 3, "B": 5} {
		got, _, err := outer.InterpretReplica(context.Background(), object("x/v1", kind))
		if err != nil || got != want {
			t.Errorf("%s: got %d, %v; want %d", kind, got, err, want)
		}
	}
}

func TestHealth(t *testing.T) {
	chain := interpreter.NewChain(&fake{kinds: map[string]bool{"Good": true}, healthy: true},
		&fake{kinds: map[string]bool{"Bad": true}})
	for kind, want := range map[string]workv1alpha1.ResourceHealth{
		"Good": workv1alpha1.ResourceHealthy, "Bad": workv1alpha1.ResourceUnhealthy, "Other": workv1alpha1.ResourceHealthy,
	} {
		got, err := interpreter.Health(context.Background(), chain, object("x/v1", kind))
		if err != nil || got != want {
			t.Errorf("%s: Health = %s, %v; want %s", kind, got, err, want)
		}
	}
}

func TestDoNeedsItsInputs(t *testing.T) {
	i := native.New()
	d := object("apps/v1", "Deployment")
	for name, r := range map[string]*interpreter.Request{
		"retain without observed":   {Operation: interpreter.Retain, DesiredObj: d},
		"aggregate without desired": {Operation: interpreter.AggregateStatus, ObservedObj: d},
		"two objects":               {Operation: interpreter.InterpretHealth, DesiredObj: d, ObservedObj: d},
		"no object":                 {Operation: interpreter.InterpretReplica},
		"unknown operation":         {Operation: "Prune", DesiredObj: d},
	} {
		if _, err := interpreter.Do(context.Background(), i, r); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// swappedAway stands in for a live layer whose set is swapped between the chain's Handles and its call: it says it
// handles everything, then answers as the empty set it became.
type swappedAway struct{ *interpreter.Chain }

func (swappedAway) Handles(schema.GroupVersionKind, interpreter.Operation) bool { return true }

// TestChainAsksOnWhenALayerNoLongerHandles: a layer that stops handling a kind between the chain's choice and its
// call hands the call to the next link that handles it, as if it had been swapped before; ErrUnsupported (which
// the execution stage takes for "nothing to retain") comes back only when no link handles it.
func TestChainAsksOnWhenALayerNoLongerHandles(t *testing.T) {
	ctx := context.Background()
	chain := interpreter.NewChain(swappedAway{interpreter.NewChain()}, native.New())
	deploy := func(replicas int64) *unstructured.Unstructured {
		d := object("apps/v1", "Deployment")
		d.SetLabels(map[string]string{interpreter.RetainReplicasLabel: "true"})
		_ = unstructured.SetNestedField(d.Object, replicas, "spec", "replicas")
		return d
	}
	for _, op := range interpreter.Operations {
		req := &interpreter.Request{Operation: op, DesiredObj: deploy(2), InputReplicas: 3}
		if op == interpreter.Retain {
			req.ObservedObj = deploy(7)
		}
		want, wantErr := interpreter.Do(ctx, native.New(), req)
		got, err := interpreter.Do(ctx, chain, req)
		if errors.Is(wantErr, interpreter.ErrUnsupported) {
			if !errors.Is(err, interpreter.ErrUnsupported) {
				t.Errorf("%s: err = %v, want ErrUnsupported as native gives", op, err)
			}
			continue
		}
		if err != nil || wantErr != nil {
			t.Errorf("%s: err = %v, want native's %v", op, err, wantErr)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %+v, want native's answer %+v", op, got, want)
		}
	}
	if _, err := interpreter.NewChain(swappedAway{interpreter.NewChain()}).InterpretHealth(ctx, deploy(1)); !errors.Is(err, interpreter.ErrUnsupported) {
		t.Errorf("no other link: err = %v, want ErrUnsupported", err)
	}
}
