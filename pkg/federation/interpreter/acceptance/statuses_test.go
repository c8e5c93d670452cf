package acceptance

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	configv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/config/v1alpha1"
)

type customization = configv1alpha1.ResourceInterpreterCustomization

var customizations = Kind[*configv1alpha1.AcceptedVersion, *customization]{
	Noun: "customization", Key: "customization", Long: "resource interpreter customization",
	Serving: "Serving", Refused: "Refused",
	Status: func(c *customization) Fields[*configv1alpha1.AcceptedVersion] {
		s := &c.Status
		return Fields[*configv1alpha1.AcceptedVersion]{ObservedGeneration: &s.ObservedGeneration,
			ServedGeneration: &s.ServedGeneration, LastAccepted: &s.LastAccepted, Conditions: &s.Conditions}
	},
}

// TestStatusesWriteEachChangeOnceAndReportIt: a verdict the status does not say is written and reported with an
// Event; the same verdict again over the status written writes and reports nothing; a refusal is a Warning.
func TestStatusesWriteEachChangeOnceAndReportIt(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := configv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	obj := &customization{ObjectMeta: metav1.ObjectMeta{Name: "a", Generation: 2, UID: "u1"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(obj).WithStatusSubresource(obj).Build()
	events := record.NewFakeRecorder(10)
	s := NewStatuses(customizations)
	accepted := Verdict[*configv1alpha1.AcceptedVersion]{Name: "a", Generation: 2, Reason: "Accepted",
		Message: "serving 1 scripts", ServedGeneration: 2, LastAccepted: &configv1alpha1.AcceptedVersion{Generation: 2}}
	refused := Verdict[*configv1alpha1.AcceptedVersion]{Name: "a", Generation: 2, Reason: "Invalid", Err: errors.New("bad"),
		Message: "bad; none serves"}

	write := func(v Verdict[*configv1alpha1.AcceptedVersion]) *customization {
		t.Helper()
		var cur customization
		if err := c.Get(ctx, client.ObjectKey{Name: "a"}, &cur); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(ctx, c, events, []*customization{&cur}, []Verdict[*configv1alpha1.AcceptedVersion]{v}); err != nil {
			t.Fatal(err)
		}
		var after customization
		if err := c.Get(ctx, client.ObjectKey{Name: "a"}, &after); err != nil {
			t.Fatal(err)
		}
		return &after
	}
	event := func(want string) {
		t.Helper()
		select {
		case e := <-events.Events:
			if want == "" || !strings.HasPrefix(e, want) {
				t.Fatalf("Event %q, want %q", e, want)
			}
		default:
			if want != "" {
				t.Fatalf("no Event, want %q", want)
			}
		}
	}

	got := write(accepted)
	cond := got.Status.Conditions
	if got.Status.ServedGeneration != 2 || got.Status.LastAccepted == nil || len(cond) != 1 || cond[0].Status != metav1.ConditionTrue {
		t.Fatalf("status %+v, want generation 2 serving and accepted", got.Status)
	}
	event("Normal Serving serving 1 scripts")
	if again := write(accepted); again.ResourceVersion != got.ResourceVersion {
		t.Errorf("the same verdict was written again (resourceVersion %s, then %s)", got.ResourceVersion, again.ResourceVersion)
	}
	event("")
	if got := write(refused); got.Status.Conditions[0].Status != metav1.ConditionFalse || got.Status.LastAccepted != nil {
		t.Errorf("status %+v, want refused keeping nothing", got.Status)
	}
	event("Warning Refused bad; none serves")
}
