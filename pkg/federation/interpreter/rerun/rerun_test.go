package rerun

import (
	"encoding/json"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
)

var deployment = schema.GroupKind{Group: "apps", Kind: "Deployment"}

func affecting(op interpreter.Operation, gk schema.GroupKind) interpreter.Affected {
	var a interpreter.Affected
	a.Add(op, gk)
	return a
}

func everyKind(op interpreter.Operation) interpreter.Affected {
	var a interpreter.Affected
	a.AddEvery(op)
	return a
}

func request(namespace, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}
}

func TestNotifierTellsEverySubscriberUntilItCancels(t *testing.T) {
	var n Notifier
	var first, second []string
	cancel := n.Subscribe(func(a interpreter.Affected) { first = append(first, a.String()) })
	n.Subscribe(func(a interpreter.Affected) { second = append(second, a.String()) })

	n.Notify(interpreter.Affected{}) // nothing changed: nobody is told
	n.Notify(affecting(interpreter.Retain, deployment))
	cancel()
	n.Notify(affecting(interpreter.AggregateStatus, deployment))

	if want := []string{"Retain: Deployment.apps"}; !reflect.DeepEqual(first, want) {
		t.Errorf("first subscriber told %q, want %q", first, want)
	}
	if want := []string{"Retain: Deployment.apps", "AggregateStatus: Deployment.apps"}; !reflect.DeepEqual(second, want) {
		t.Errorf("second subscriber told %q, want %q", second, want)
	}
}

func binding(name, apiVersion, kind string) workv1alpha1.ResourceBinding {
	return workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: "shop", Name: name}}}
}

func TestBindingsAffectedAreThoseOfAffectedKinds(t *testing.T) {
	bindings := []workv1alpha1.ResourceBinding{
		binding("web-deployment", "apps/v1", "Deployment"),
		binding("old-deployment", "extensions/v1beta1", "Deployment"),
		binding("db-statefulset", "apps/v1", "StatefulSet"),
		binding("cm-configmap", "v1", "ConfigMap"),
		binding("bad", "a/b/c", "Deployment"),
	}
	for _, tc := range []struct {
		name string
		a    interpreter.Affected
		ops  []interpreter.Operation
		want []reconcile.Request
	}{
		{"the kind, any version", affecting(interpreter.AggregateStatus, deployment), []interpreter.Operation{interpreter.AggregateStatus},
			[]reconcile.Request{request("shop", "web-deployment")}},
		{"an operation the stage does not ask", affecting(interpreter.Retain, deployment), []interpreter.Operation{interpreter.AggregateStatus}, nil},
		{"the core group", affecting(interpreter.InterpretDependency, schema.GroupKind{Kind: "ConfigMap"}),
			[]interpreter.Operation{interpreter.ReviseReplica, interpreter.InterpretDependency}, []reconcile.Request{request("shop", "cm-configmap")}},
		{"every kind", everyKind(interpreter.AggregateStatus), []interpreter.Operation{interpreter.AggregateStatus},
			[]reconcile.Request{request("shop", "web-deployment"), request("shop", "old-deployment"), request("shop", "db-statefulset"), request("shop", "cm-configmap")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := BindingsAffected(bindings, tc.a, tc.ops...); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("BindingsAffected = %v, want %v", got, tc.want)
			}
		})
	}
}

func work(t *testing.T, name string, objs ...map[string]any) workv1alpha1.Work {
	t.Helper()
	w := workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
	for _, o := range objs {
		raw, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	return w
}

func object(apiVersion, kind, name string) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}
}

func TestWorksAffectedAreThoseCarryingAnAffectedKind(t *testing.T) {
	works := []workv1alpha1.Work{
		work(t, "web-member1", object("apps/v1", "Deployment", "web")),
		work(t, "both-member1", object("v1", "ConfigMap", "cm"), object("apps/v1", "Deployment", "web"), object("apps/v1", "Deployment", "api")),
		work(t, "cm-member1", object("v1", "ConfigMap", "cm")),
		work(t, "empty-member1"),
	}
	for _, tc := range []struct {
		name string
		a    interpreter.Affected
		ops  []interpreter.Operation
		want []reconcile.Request
	}{
		{"a kind some Works carry, each Work once", affecting(interpreter.Retain, deployment), []interpreter.Operation{interpreter.Retain},
			[]reconcile.Request{request("shop", "web-member1"), request("shop", "both-member1")}},
		{"one of the stage's operations", affecting(interpreter.InterpretHealth, schema.GroupKind{Kind: "ConfigMap"}),
			[]interpreter.Operation{interpreter.InterpretStatus, interpreter.InterpretHealth},
			[]reconcile.Request{request("shop", "both-member1"), request("shop", "cm-member1")}},
		{"a kind no Work carries", affecting(interpreter.Retain, schema.GroupKind{Group: "apps", Kind: "StatefulSet"}), []interpreter.Operation{interpreter.Retain}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := WorksAffected(works, tc.a, tc.ops...); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("WorksAffected = %v, want %v", got, tc.want)
			}
		})
	}
}
