package filter

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/fedmesh/fedmesh/pkg/shard"
)

// The benchmarks replay what an informer's initial sync moves through the proxy: client-go 1.36 syncs with a
// WatchList (a watch with sendInitialEvents=true), so a stream of ADDED events and the bookmark that ends the
// initial events; an older client, or a relist, reads one big list. Pods look like a Deployment's pods do on a
// real cluster (managedFields, owner, status, probes), a few KiB each in JSON.

const (
	benchPods       = 5000
	benchNamespaces = 50
)

// benchNamespace is the namespace of the i-th benchmark pod; a shard that owns half the hash space keeps about
// half of them.
func benchNamespace(i int) string { return fmt.Sprintf("team-%02d", i%benchNamespaces) }

// benchOwned is the lower half of the hash space: the shard of the filtering benchmarks.
var benchOwned = shard.NewSet(shard.Range{First: 0, Last: 1<<63 - 1})

func keepOwned(ns string) bool { return benchOwned.ContainsNamespace(ns) }

func passAll(string) bool { return true }

// realisticPod is a pod of a Deployment, scheduled and running, as the API server returns it.
func realisticPod(i int) *corev1.Pod {
	ns, name := benchNamespace(i), fmt.Sprintf("web-7d9f8c6b5d-%05d", i)
	created := metav1.NewTime(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC))
	fields := func(s string) *metav1.FieldsV1 { return &metav1.FieldsV1{Raw: []byte(s)} }
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz",
		Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP}}, PeriodSeconds: 10, TimeoutSeconds: 1,
		SuccessThreshold: 1, FailureThreshold: 3}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, GenerateName: "web-7d9f8c6b5d-", UID: types.UID(fmt.Sprintf("4b1e7c3a-0f2d-4c5e-9a8b-%012d", i)),
			ResourceVersion: fmt.Sprint(100000 + i), CreationTimestamp: created,
			Labels:      map[string]string{"app": "web", "pod-template-hash": "7d9f8c6b5d", "tier": "frontend"},
			Annotations: map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-07-01T11:59:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f8c6b5d",
				UID: "9c0d1e2f-3a4b-5c6d-7e8f-901234567890", Controller: ptr(true), BlockOwnerDeletion: ptr(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
					Time: &created, FieldsType: "FieldsV1", FieldsV1: fields(`{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{},"f:tier":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"9c0d1e2f-3a4b-5c6d-7e8f-901234567890\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:livenessProbe":{},"f:name":{},"f:ports":{},"f:readinessProbe":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}`)},
				{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &created,
					FieldsType: "FieldsV1", Subresource: "status", FieldsV1: fields(`{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"10.244.1.17\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`)},
			},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "web", Image: "registry.example.com/team/web:v1.42.7",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access-x7k2p", ReadOnly: true,
					MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
				LivenessProbe: probe, ReadinessProbe: probe,
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy: corev1.PullIfNotPresent,
			}},
			Volumes: []corev1.Volume{{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(3607))}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
						Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				}, DefaultMode: ptr(int32(420))}}}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, ServiceAccountName: "default",
			NodeName: fmt.Sprintf("node-%03d", i%40), SchedulerName: "default-scheduler",
			TerminationGracePeriodSeconds: ptr(int64(30)), EnableServiceLinks: ptr(true),
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
			},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: "172.18.0.3", PodIP: "10.244.1.17", StartTime: &created,
			PodIPs: []corev1.PodIP{{IP: "10.244.1.17"}}, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: created},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: created},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: created},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: created},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "web", Ready: true, Started: ptr(true), Image: "registry.example.com/team/web:v1.42.7",
				ImageID:     "registry.example.com/team/web@sha256:3f1c2e5d7a9b0c4e6f8a1b3d5c7e9f0a2b4c6d8e0f1a3b5c7d9e1f3a5b7c9d1e",
				ContainerID: "containerd://8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b",
				State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: created}},
			}},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// benchWatchList is the stream of a WatchList of benchPods pods: an ADDED event each, then the bookmark that ends
// the initial events.
func benchWatchList(b *testing.B, c codec) []byte {
	events := make([]watch.Event, 0, benchPods+1)
	for i := range benchPods {
		events = append(events, watch.Event{Type: watch.Added, Object: realisticPod(i)})
	}
	end := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: fmt.Sprint(100000 + benchPods),
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	events = append(events, watch.Event{Type: watch.Bookmark, Object: end})
	return c.watchStream(b, events...)
}

// chunkReader hands out its data in reads of at most chunk bytes, as a TCP connection does.
type chunkReader struct {
	data  []byte
	chunk int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.chunk)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// BenchmarkWatchReader reads a WatchList's initial events through a WatchReader: relaying them (keep nil: the
// proxy in server mode, where the API server filtered), reading every object's namespace but passing all, and
// filtering by namespace (client mode: about half pass).
func BenchmarkWatchReader(b *testing.B) {
	for _, c := range codecs {
		stream := benchWatchList(b, c)
		for _, k := range []struct {
			name string
			keep func(string) bool
		}{{"relay", nil}, {"pass-all", passAll}, {"filter", keepOwned}} {
			b.Run(c.name+"/"+k.name, func(b *testing.B) {
				b.SetBytes(int64(len(stream)))
				b.ReportAllocs()
				for b.Loop() {
					wr, err := NewWatchReader(&chunkReader{data: stream, chunk: 32 << 10}, c.contentType, k.keep)
					if err != nil {
						b.Fatal(err)
					}
					for {
						if _, err := wr.Next(); errors.Is(err, io.EOF) {
							break
						} else if err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// benchPodList is a list of benchPods pods. For a plan with a shardSelector it is what the API server answers
// when it filtered: its shardInfo echoes the selector.
func benchPodList(b *testing.B, c codec, plan Plan) []byte {
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "200000"}}
	if plan.ShardSelector != "" {
		list.ShardInfo = &metav1.ShardInfo{Selector: plan.ShardSelector}
	}
	for i := range benchPods {
		list.Items = append(list.Items, *realisticPod(i))
	}
	return c.encode(b, list)
}

// BenchmarkListServerMode relays a list that the API server filtered: the proxy checks metadata.shardInfo and
// sends the body on, as pkg/proxy does in server mode.
func BenchmarkListServerMode(b *testing.B) {
	plan, err := Rewrite(ModeServer, benchOwned, url.Values{})
	if err != nil {
		b.Fatal(err)
	}
	key := ProbeKey{GroupResource: schema.GroupResource{Resource: "pods"}}
	for _, c := range codecs {
		body := benchPodList(b, c, plan)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			var p Prober
			for b.Loop() {
				if err := relayServerList(&p, key, plan, &chunkReader{data: body, chunk: 32 << 10}, c.contentType, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// relayServerList is what the proxy does with a list response in server mode: check shardInfo at the start of
// the body, then send the body on.
func relayServerList(p *Prober, key ProbeKey, plan Plan, body io.Reader, contentType string, w io.Writer) error {
	h, err := ReadListHead(body, contentType)
	if err != nil {
		return err
	}
	if !h.Known {
		whole, err := io.ReadAll(io.MultiReader(bytes.NewReader(h.Read), body))
		if err != nil {
			return err
		}
		if clientFilter, err := p.CheckList(key, plan, whole, contentType); err != nil || clientFilter {
			return fmt.Errorf("the server's filtering was not recognized (%v)", err)
		}
		_, err = w.Write(whole)
		return err
	}
	if p.CheckShardInfo(key, plan, h.ShardInfo) {
		return errors.New("the server's filtering was not recognized")
	}
	_, err = io.Copy(w, io.MultiReader(bytes.NewReader(h.Read), body))
	return err
}

// BenchmarkFilterList filters a list in the proxy (client mode), for comparison with the server mode.
func BenchmarkFilterList(b *testing.B) {
	for _, c := range codecs {
		body := benchPodList(b, c, Plan{})
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := FilterList(body, c.contentType, keepOwned); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
