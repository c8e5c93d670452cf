package eventrecord

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/fedmesh/fedmesh/test/cluster"
)

// TestRepeatsFoldByMessage records against a real API server: repeats of one message are one Event with a count,
// a new message of the same reason is an Event of its own (client-go's events/v1 broadcaster would have counted it
// into the first one's series, note and all), a reason past the rate limit leaves the others through, and kubectl
// reads them in core/v1 and events/v1 alike.
func TestRepeatsFoldByMessage(t *testing.T) {
	cs, b := start(t)
	rec := b.Recorder("fedmesh-test")
	ctx := context.Background()
	cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "regarding"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec.Eventf(cm, corev1.EventTypeNormal, "Assigned", "epoch %d", 1)
	rec.Eventf(cm, corev1.EventTypeNormal, "Assigned", "epoch %d", 1)
	rec.Eventf(cm, corev1.EventTypeNormal, "Assigned", "epoch %d", 2)
	// Far more of one reason than the rate limit lets through (a burst of 25, then one a second) does not
	// silence another reason.
	const chatty = 60
	for range chatty {
		rec.Eventf(cm, corev1.EventTypeNormal, "Chatty", "again")
	}
	rec.Eventf(cm, corev1.EventTypeNormal, "Quiet", "once")

	want := []string{"Assigned epoch 1 x2 from fedmesh-test", "Assigned epoch 2 x1 from fedmesh-test", "Quiet once x1 from fedmesh-test"}
	var got []string
	var chattyCount int32
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		list, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=regarding"})
		if err != nil {
			t.Fatal(err)
		}
		got, chattyCount = got[:0], 0
		for _, e := range list.Items {
			if e.Reason == "Chatty" {
				chattyCount = e.Count
				continue
			}
			got = append(got, fmt.Sprintf("%s %s x%d from %s", e.Reason, e.Message, e.Count, e.Source.Component))
		}
		slices.Sort(got)
		if slices.Equal(got, want) && chattyCount >= 25 {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("core/v1 events %q, want %q", got, want)
	}
	if chattyCount < 25 || chattyCount >= chatty {
		t.Errorf("Chatty counted %d times, want the burst of 25 (and a few refilled), not all %d", chattyCount, chatty)
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

// TestABurstOverManyObjectsLands: one event on each of many objects at once (a burst of new templates) all reach
// the API server, even when the broadcaster is shut down right after they were recorded (as a process stopping
// does).
func TestABurstOverManyObjectsLands(t *testing.T) {
	cs, b := start(t)
	rec := b.Recorder("fedmesh-test")
	const objects = 300
	for i := range objects {
		// Events may be about objects that are not (or no longer) there: no need to create them.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("burst-%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))}}
		rec.Eventf(cm, corev1.EventTypeNormal, "Created", "object %d", i)
	}
	b.Shutdown()
	var landed int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		list, err := cs.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "reason=Created"})
		if err != nil {
			t.Fatal(err)
		}
		landed = 0
		for _, e := range list.Items {
			if strings.HasPrefix(e.InvolvedObject.Name, "burst-") && e.Message == "object "+strings.TrimPrefix(e.InvolvedObject.Name, "burst-") {
				landed++
			}
		}
		if landed == objects {
			return
		}
	}
	t.Errorf("%d of %d events landed", landed, objects)
}

// start runs a real API server and a broadcaster writing to it, stopped when t ends.
func start(t *testing.T) (kubernetes.Interface, *Broadcaster) {
	t.Helper()
	c := cluster.New(t, cluster.Options{Name: "events"})
	httpClient, err := rest.HTTPClientFor(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(c.Config(), httpClient, scheme.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Shutdown)
	return c.Clientset(), b
}
