package filter

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/fedmesh/fedmesh/pkg/shard"
)

func TestStampCreate(t *testing.T) {
	bucket := shard.BucketLabelValue(mine)
	for _, c := range codecs {
		for _, tc := range []struct {
			name   string
			labels map[string]string
		}{
			{"keeps other labels", map[string]string{"app": "web", "tier": "front"}},
			{"no labels", nil},
			{"fixes a wrong bucket", map[string]string{shard.BucketLabel: "zz", "app": "web"}},
		} {
			t.Run(c.name+"/"+tc.name, func(t *testing.T) {
				in := pod("", "p") // a create's body may leave the namespace to the path
				in.Labels = tc.labels
				out, err := StampCreate(c.encode(t, in), c.contentType, mine)
				if err != nil {
					t.Fatal(err)
				}
				var got corev1.Pod
				c.decode(t, out, &got)
				want := pod("", "p")
				want.Labels = map[string]string{shard.BucketLabel: bucket}
				for k, v := range tc.labels {
					if k != shard.BucketLabel {
						want.Labels[k] = v
					}
				}
				setKind(t, want)
				if diff := cmp.Diff(want, &got); diff != "" {
					t.Errorf("stamped pod (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestStampCreateJSONKeepsTheRest(t *testing.T) {
	in := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","labels":null},"data":{"z":"1","a":"2"},"future":[1]}`
	out, err := StampCreate([]byte(in), "application/json", mine)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","labels":{"` + shard.BucketLabel + `":"` +
		shard.BucketLabelValue(mine) + `"}},"data":{"z":"1","a":"2"},"future":[1]}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	for _, bad := range []string{`[]`, `{"metadata":[]}`, `{"metadata":{"labels":"x"}}`, ``} {
		if _, err := StampCreate([]byte(bad), "application/json", mine); err == nil || !strings.Contains(err.Error(), "stamp") {
			t.Errorf("%s: error %v", bad, err)
		}
	}
}
