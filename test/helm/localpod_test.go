package helm

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedmesh/fedmesh/test/fedrun"
)

// There is no kubelet here: kwok only marks the chart's pods Running. localContainer plays the kubelet's part for
// the fedmesh binaries the test runs as local processes: it takes a container of a pod (or pod template) as the
// API server holds it, fills the volumes the container mounts as the kubelet would (Secrets, ConfigMaps, the
// downward API, service-account tokens bound to the pod), moves the paths into those volumes to the local copies,
// and expands $(VAR) references. What a local process must change beyond that, its caller appends.

// serviceAccountDir is where a pod's containers find their token and the cluster's CA.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// localContainer is one container of a pod made runnable on this machine.
type localContainer struct {
	// Args are the container's arguments, and Env its environment, as the kubelet would resolve them, with
	// mounted paths moved to the local copies.
	Args []string
	Env  map[string]string
	// mounts maps each mount path in the container to its local directory.
	mounts map[string]string
}

// newLocalContainer lays out, under dir, the volumes that container name of pod mounts.
func newLocalContainer(t *testing.T, c client.Client, cs kubernetes.Interface, pod *corev1.Pod, name, dir string) *localContainer {
	t.Helper()
	var ctr *corev1.Container
	all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for i := range all {
		if all[i].Name == name {
			ctr = &all[i]
		}
	}
	if ctr == nil {
		t.Fatalf("pod %s has no container %s", pod.Name, name)
	}
	lc := &localContainer{Env: map[string]string{}, mounts: map[string]string{}}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	for _, m := range ctr.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			t.Fatalf("pod %s: container %s mounts volume %s, which the pod lacks", pod.Name, name, m.Name)
		}
		local := filepath.Join(dir, name, m.Name)
		writeFiles(t, local, volumeFiles(t, c, cs, pod, v))
		lc.mounts[m.MountPath] = filepath.Join(local, m.SubPath)
	}
	expand := func(s string) string {
		return varRef.ReplaceAllStringFunc(s, func(ref string) string {
			if v, ok := lc.Env[ref[2:len(ref)-1]]; ok {
				return v
			}
			return ref // as the kubelet does with an unknown variable
		})
	}
	for _, e := range ctr.Env {
		switch {
		case e.ValueFrom == nil:
			lc.Env[e.Name] = lc.Path(expand(e.Value))
		case e.ValueFrom.FieldRef != nil:
			lc.Env[e.Name] = fieldValue(t, pod, e.ValueFrom.FieldRef.FieldPath)
		case e.ValueFrom.ResourceFieldRef != nil:
			lc.Env[e.Name] = resourceValue(t, pod, ctr, e.ValueFrom.ResourceFieldRef)
		default:
			t.Fatalf("pod %s: env %s of container %s comes from a source the test cannot resolve", pod.Name, e.Name, name)
		}
	}
	for _, a := range ctr.Args {
		a = expand(a)
		if flag, value, ok := strings.Cut(a, "="); ok && strings.HasPrefix(flag, "--") {
			a = flag + "=" + lc.Path(value)
		} else {
			a = lc.Path(a)
		}
		lc.Args = append(lc.Args, a)
	}
	return lc
}

// varRef is a $(VAR) reference in a container's args or env.
var varRef = regexp.MustCompile(`\$\([A-Za-z_][A-Za-z0-9_]*\)`)

// Path moves a path inside the container to the local copy of the volume mounted there.
func (lc *localContainer) Path(p string) string {
	best := ""
	for mount := range lc.mounts {
		if (p == mount || strings.HasPrefix(p, mount+"/")) && len(mount) > len(best) {
			best = mount
		}
	}
	if best == "" {
		return p
	}
	return lc.mounts[best] + strings.TrimPrefix(p, best)
}

// Read is the content of a file the container sees at p.
func (lc *localContainer) Read(t *testing.T, p string) []byte {
	t.Helper()
	data, err := os.ReadFile(lc.Path(p))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// volumeFiles are the files of volume v as the kubelet would fill them for pod, by path in the volume.
func volumeFiles(t *testing.T, c client.Client, cs kubernetes.Interface, pod *corev1.Pod, v corev1.Volume) map[string][]byte {
	t.Helper()
	ctx := t.Context()
	files := map[string][]byte{}
	add := func(more map[string][]byte) {
		for k, v := range more {
			files[k] = v
		}
	}
	secret := func(name string, items []corev1.KeyToPath) map[string][]byte {
		var s corev1.Secret
		if err := c.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: name}, &s); err != nil {
			t.Fatalf("pod %s: volume %s: %v", pod.Name, v.Name, err)
		}
		return keyFiles(s.Data, items)
	}
	configMap := func(name string, items []corev1.KeyToPath) map[string][]byte {
		var cm corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: name}, &cm); err != nil {
			t.Fatalf("pod %s: volume %s: %v", pod.Name, v.Name, err)
		}
		data := map[string][]byte{}
		for k, s := range cm.Data {
			data[k] = []byte(s)
		}
		return keyFiles(data, items)
	}
	downward := func(items []corev1.DownwardAPIVolumeFile) {
		for _, item := range items {
			if item.FieldRef == nil {
				t.Fatalf("pod %s: volume %s: only field references are supported", pod.Name, v.Name)
			}
			files[item.Path] = []byte(fieldValue(t, pod, item.FieldRef.FieldPath))
		}
	}
	switch {
	case v.EmptyDir != nil:
	case v.Secret != nil:
		add(secret(v.Secret.SecretName, v.Secret.Items))
	case v.ConfigMap != nil:
		add(configMap(v.ConfigMap.Name, v.ConfigMap.Items))
	case v.DownwardAPI != nil:
		downward(v.DownwardAPI.Items)
	case v.Projected != nil:
		for _, src := range v.Projected.Sources {
			switch {
			case src.ServiceAccountToken != nil:
				var audiences []string
				if a := src.ServiceAccountToken.Audience; a != "" {
					audiences = []string{a}
				}
				var seconds int64
				if src.ServiceAccountToken.ExpirationSeconds != nil {
					seconds = *src.ServiceAccountToken.ExpirationSeconds
				}
				token, err := fedrun.BoundToken(ctx, cs, pod, audiences, seconds)
				if err != nil {
					t.Fatal(err)
				}
				files[src.ServiceAccountToken.Path] = []byte(token)
			case src.ConfigMap != nil:
				add(configMap(src.ConfigMap.Name, src.ConfigMap.Items))
			case src.Secret != nil:
				add(secret(src.Secret.Name, src.Secret.Items))
			case src.DownwardAPI != nil:
				downward(src.DownwardAPI.Items)
			default:
				t.Fatalf("pod %s: volume %s: a projection the test cannot fill", pod.Name, v.Name)
			}
		}
	default:
		t.Fatalf("pod %s: volume %s of a kind the test cannot fill", pod.Name, v.Name)
	}
	return files
}

// keyFiles are the files of a Secret's or ConfigMap's data: the items' keys at their paths, or every key.
func keyFiles(data map[string][]byte, items []corev1.KeyToPath) map[string][]byte {
	out := map[string][]byte{}
	if len(items) == 0 {
		for k, v := range data {
			out[k] = v
		}
	}
	for _, item := range items {
		out[item.Path] = data[item.Key]
	}
	return out
}

func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for path, data := range files {
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// fieldLabel is a downward-API reference to one label or annotation.
var fieldLabel = regexp.MustCompile(`^metadata\.(labels|annotations)\['(.+)'\]$`)

// fieldValue resolves a downward-API field path of pod.
func fieldValue(t *testing.T, pod *corev1.Pod, path string) string {
	t.Helper()
	switch path {
	case "metadata.name":
		return pod.Name
	case "metadata.namespace":
		return pod.Namespace
	case "metadata.uid":
		return string(pod.UID)
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName
	}
	if m := fieldLabel.FindStringSubmatch(path); m != nil {
		if m[1] == "labels" {
			return pod.Labels[m[2]]
		}
		return pod.Annotations[m[2]]
	}
	t.Fatalf("pod %s: field %s is not one the test resolves", pod.Name, path)
	return ""
}

// resourceValue is what the kubelet makes of a container's resource for the downward API: the quantity in units
// of the divisor, rounded up; an unset request is 0. An unset limit would be the node's allocatable, which this
// machine has no notion of: the test fails on one.
func resourceValue(t *testing.T, pod *corev1.Pod, ctr *corev1.Container, ref *corev1.ResourceFieldSelector) string {
	t.Helper()
	if ref.ContainerName != "" && ref.ContainerName != ctr.Name {
		t.Fatalf("pod %s: container %s reads the resources of container %s, which the test does not resolve", pod.Name, ctr.Name, ref.ContainerName)
	}
	kind, name, _ := strings.Cut(ref.Resource, ".")
	list := ctr.Resources.Requests
	if kind == "limits" {
		list = ctr.Resources.Limits
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok && kind == "limits" {
		t.Fatalf("pod %s: container %s reads its unset %s", pod.Name, ctr.Name, ref.Resource)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == string(corev1.ResourceCPU) {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10)
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10)
}

// Environ is the container's environment as KEY=value pairs.
func (lc *localContainer) Environ() []string {
	out := make([]string, 0, len(lc.Env))
	for k, v := range lc.Env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// flagValue is the value of --name=value in args (the last one wins, as with the binaries' flags).
func flagValue(args []string, name string) string {
	var v string
	for _, a := range args {
		if after, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			v = after
		}
	}
	return v
}
