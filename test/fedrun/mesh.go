package fedrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcanary "github.com/fedmesh/fedmesh/pkg/manager/canary"
	"github.com/fedmesh/fedmesh/test/cluster"
)

// MeshOptions say which operator a Mesh shards.
type MeshOptions struct {
	// Host is the cluster, with fedmesh's CRDs installed.
	Host *cluster.Cluster
	// Client is an admin client of the host with fedmesh's types.
	Client client.Client
	// BinDir holds the manager and proxy binaries (see Build).
	BinDir string
	// Namespace holds the operator's ShardingConfig, pods and service account; Name names the ShardingConfig and
	// the service account, and is the pods' app label (the canary's pods: Name-canary).
	Namespace, Name string
	// Rules are what the operator's service account may do; its pods' tokens carry that through the proxies.
	Rules []rbacv1.PolicyRule
	// ManagerArgs and ProxyArgs are extra flags of the manager and of every proxy.
	ManagerArgs, ProxyArgs []string
	// ProxyPprof serves each proxy's /debug/pprof (Shard.Pprof), for profiling a run.
	ProxyPprof bool
	// Dir holds the processes' logs and files; a new temporary directory, removed by Stop, when empty.
	Dir string
}

// Mesh is the manager and the shard pods and proxies of one sharded operator, as a cluster would run them: each
// pod is an API object (no node runs it), each proxy a cmd/proxy process configured by the manager over xDS and
// authenticated by a token bound to its pod. What runs in the pods (the operator) is the caller's.
type Mesh struct {
	opts    MeshOptions
	dir     string
	ownDir  bool
	xds     string
	metrics string
	manager *cluster.Process
	shards  map[int]*Shard

	cert, key string
	ca        []byte
}

// Shard is one shard pod of a Mesh and its proxy.
type Shard struct {
	Pod *corev1.Pod
	// Addr is the proxy's address (TLS, verified with the Mesh's CA); Probes serves its /readyz and /metrics;
	// Pprof its /debug/pprof, when MeshOptions.ProxyPprof.
	Addr, Probes, Pprof string
	// Token is bound to the pod: what the operator in the pod authenticates with.
	Token string
	proc  *cluster.Process
}

// StartMesh makes the operator's service account and runs the manager; shards come with AddShard.
func StartMesh(ctx context.Context, opts MeshOptions) (m *Mesh, err error) {
	m = &Mesh{opts: opts, dir: opts.Dir, shards: map[int]*Shard{}}
	if m.dir == "" {
		if m.dir, err = os.MkdirTemp("", "fedmesh-mesh-"); err != nil {
			return nil, err
		}
		m.ownDir = true
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, m.Logs(40))
			m.Stop()
		}
	}()
	if _, err := opts.Host.ServiceAccount(ctx, opts.Namespace, opts.Name, opts.Rules); err != nil {
		return m, err
	}
	// Over TLS: clients built from a kubeconfig send no credentials to a plain-HTTP server.
	if m.cert, m.key, m.ca, err = WriteServingCert(m.dir); err != nil {
		return m, err
	}
	if m.xds, err = freeAddr(); err != nil {
		return m, err
	}
	if m.metrics, err = freeAddr(); err != nil {
		return m, err
	}
	probes, err := freeAddr()
	if err != nil {
		return m, err
	}
	args := append([]string{"--kubeconfig", opts.Host.Kubeconfig(), "--leader-elect=false", "--health-probe-bind-address", probes,
		"--metrics-bind-address", m.metrics, "--xds-insecure", "--xds-bind-address", m.xds}, opts.ManagerArgs...)
	if m.manager, err = cluster.StartProcess("manager", m.dir, filepath.Join(opts.BinDir, "manager"), args...); err != nil {
		return m, err
	}
	return m, WaitReady(m.manager, "http://"+probes+"/readyz")
}

// AddShard makes shard pod id (its ordinal in apps.kubernetes.io/pod-index) and runs its proxy.
func (m *Mesh) AddShard(ctx context.Context, id int) (*Shard, error) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", m.opts.Name, id), Namespace: m.opts.Namespace,
			Labels: map[string]string{"app": m.opts.Name, "apps.kubernetes.io/pod-index": strconv.Itoa(id)}},
		Spec: corev1.PodSpec{ServiceAccountName: m.opts.Name, Containers: []corev1.Container{{Name: "operator", Image: "operator:v1"}}},
	}
	return m.addPod(ctx, pod, id, false)
}

// AddCanary makes the canary pod (app label Name-canary, image operator:v2, Running and Ready as a kubelet would
// say) and runs its proxy as shard id, the canary shard (spec.shards). Its fedmesh.io/proxy-metrics annotation
// points the manager's canary analysis at the proxy, since the pod has no IP.
func (m *Mesh) AddCanary(ctx context.Context, id int) (*Shard, error) {
	probes, err := freeAddr()
	if err != nil {
		return nil, err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: m.opts.Name + "-canary", Namespace: m.opts.Namespace,
			Labels: map[string]string{"app": m.opts.Name + "-canary"}, Annotations: map[string]string{mcanary.MetricsAnnotation: probes}},
		Spec: corev1.PodSpec{ServiceAccountName: m.opts.Name, Containers: []corev1.Container{{Name: "operator", Image: "operator:v2"}}},
	}
	return m.addPod(ctx, pod, id, true)
}

func (m *Mesh) addPod(ctx context.Context, pod *corev1.Pod, id int, ready bool) (*Shard, error) {
	cs := m.opts.Host.Clientset()
	pod, err := cs.CoreV1().Pods(m.opts.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	if ready {
		now := metav1.Now()
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
		c := pod.Spec.Containers[0]
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: c.Image, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
		if pod, err = cs.CoreV1().Pods(m.opts.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			return nil, err
		}
	}
	s := &Shard{Pod: pod, Probes: pod.Annotations[mcanary.MetricsAnnotation]}
	if s.Token, err = BoundToken(ctx, cs, pod, nil, 0); err != nil {
		return nil, err
	}
	tokenFile := filepath.Join(m.dir, pod.Name+".token")
	if err := os.WriteFile(tokenFile, []byte(s.Token), 0o600); err != nil {
		return nil, err
	}
	if s.Addr, err = freeAddr(); err != nil {
		return nil, err
	}
	if s.Probes == "" {
		if s.Probes, err = freeAddr(); err != nil {
			return nil, err
		}
	}
	args := append([]string{"--upstream-kubeconfig", m.opts.Host.Kubeconfig(), "--listen-address", s.Addr, "--probe-address", s.Probes,
		"--state-dir", filepath.Join(m.dir, pod.Name+"-state"), "--xds-address", m.xds, "--xds-insecure",
		"--xds-token-file", tokenFile, "--sharding-config", m.opts.Namespace + "/" + m.opts.Name, "--shard", strconv.Itoa(id),
		"--pod-name", pod.Name, "--pod-namespace", m.opts.Namespace,
		"--tls-cert-file", m.cert, "--tls-private-key-file", m.key}, m.opts.ProxyArgs...)
	if m.opts.ProxyPprof {
		if s.Pprof, err = freeAddr(); err != nil {
			return nil, err
		}
		args = append(args, "--pprof-address", s.Pprof)
	}
	// One thread, as the injected sidecar at its default CPU request (50m) runs.
	if s.proc, err = cluster.StartProcessWithEnv("proxy-"+pod.Name, m.dir, filepath.Join(m.opts.BinDir, "proxy"),
		[]string{"GOMAXPROCS=1"}, args...); err != nil {
		return nil, err
	}
	if err := WaitReady(s.proc, "http://"+s.Probes+"/readyz"); err != nil {
		return nil, err
	}
	m.shards[id] = s
	return s, nil
}

// RemoveShard deletes shard id's pod and stops its proxy, as a scale-down would, and returns once the pod is
// gone (so a pod of the same name can be made again).
func (m *Mesh) RemoveShard(ctx context.Context, id int) error {
	s := m.shards[id]
	if s == nil {
		return fmt.Errorf("no shard %d", id)
	}
	delete(m.shards, id)
	pods := m.opts.Host.Clientset().CoreV1().Pods(m.opts.Namespace)
	zero := int64(0)
	err := pods.Delete(ctx, s.Pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	s.proc.Stop(5 * time.Second)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := pods.Get(ctx, s.Pod.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
	}
	return fmt.Errorf("pod %s not gone after 30s", s.Pod.Name)
}

// Shard is shard id, or nil.
func (m *Mesh) Shard(id int) *Shard { return m.shards[id] }

// Config is what the operator in shard id's pod would use: its proxy, with the pod's token.
func (m *Mesh) Config(id int) *rest.Config {
	return &rest.Config{Host: "https://" + m.shards[id].Addr, BearerToken: m.shards[id].Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: m.ca}}
}

// CA is the proxies' serving certificate, their own CA.
func (m *Mesh) CA() []byte { return m.ca }

// ManagerMetrics is the host:port of the manager's /metrics.
func (m *Mesh) ManagerMetrics() string { return m.metrics }

// Logs are the last n lines of the manager's and every proxy's log.
func (m *Mesh) Logs(n int) string {
	procs := []*cluster.Process{m.manager}
	for _, s := range m.shards {
		procs = append(procs, s.proc)
	}
	var out string
	for _, p := range procs {
		if p != nil {
			out += fmt.Sprintf("----- %s -----\n%s\n", filepath.Base(p.LogPath()), p.Tail(n))
		}
	}
	return out
}

// Stop stops the proxies, then the manager, and removes the mesh's own files.
func (m *Mesh) Stop() {
	for _, s := range m.shards {
		s.proc.Stop(10 * time.Second)
	}
	if m.manager != nil {
		m.manager.Stop(10 * time.Second)
	}
	if m.ownDir && os.Getenv("FEDMESH_KEEP_RUN") == "" {
		os.RemoveAll(m.dir)
	}
}
