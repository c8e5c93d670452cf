package eventrecord

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/fedmesh/fedmesh/test/cluster"
)

// TestRepeatsFoldByMessage records against a real API server: repeats of one message are one Event with a count,
// a new message of the same reason is an Event of its own (client-go's events/v1 broadcaster would have counted it
// into the first one's series, note and all), a reason past the rate limit leaves the others through, and kubectl
// reads them in core/v1 and events/v1 alike.
func TestRepeatsFoldByMessage(t *testing.T) {
	c := cluster.New(t, cluster.Options{Name: "events"})
	cs := c.Clientset()
	ctx := context.Background()
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "regarding"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(c.Config(), scheme.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- b.Start(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	rec := b.Recorder("fedmesh-test")
	rec.Eventf(cm, corev1.EventTypeNormal, "Assigned", "epoch %d", 1)
	rec.Eventf(cm, corev1.EventTypeNormal, "Assigned", "epoch %d", 1)
	rec.Eventf(cm, corev1.EventTypeNormal, "Assigned", "epoch %d", 2)
	// More of one reason than the rate limit's burst (25) does not silence another reason.
	for range 30 {
		rec.Eventf(cm, corev1.EventTypeNormal, "Chatty", "again")
	}
	rec.Eventf(cm, corev1.EventTypeNormal, "Quiet", "once")

	want := []string{"Assigned epoch 1 x2 from fedmesh-test", "Assigned epoch 2 x1 from fedmesh-test",
		"Chatty again x25 from fedmesh-test", "Quiet once x1 from fedmesh-test"}
	var got []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		list, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=regarding"})
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, e := range list.Items {
			got = append(got, fmt.Sprintf("%s %s x%d from %s", e.Reason, e.Message, e.Count, e.Source.Component))
		}
		slices.Sort(got)
		if slices.Equal(got, want) {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("core/v1 events %q, want %q", got, want)
	}
	notes, err := cs.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var read []string
	for _, e := range notes.Items {
		if e.Regarding.UID == cm.UID {
			read = append(read, e.Reason+" "+e.Note)
		}
	}
	slices.Sort(read)
	if want := []string{"Assigned epoch 1", "Assigned epoch 2", "Chatty again", "Quiet once"}; !slices.Equal(read, want) {
		t.Errorf("events/v1 notes %q, want %q", read, want)
	}
}
