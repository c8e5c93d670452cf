package binding

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/execution"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter"
	"github.com/fedmesh/fedmesh/pkg/federation/interpreter/native"
	"github.com/fedmesh/fedmesh/pkg/federation/member"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/pkg/federation/rendering"
	"github.com/fedmesh/fedmesh/pkg/federation/status"
	"github.com/fedmesh/fedmesh/pkg/federation/verdicts"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

// What the host's controllers and admission filled into a workload's dependencies stays in the host, against real
// API servers with their controller managers: a legacy service-account token Secret reaches the member without
// the host's token and service account UID (the member's token controller fills its own), and a claim reaches it
// without the host's default storage class (the member's default applies) but with the class its author chose.
func TestHostFilledDependenciesStayHome(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cf, err := cluster.StartFederation(ctx, cluster.FederationOptions{Members: 1,
		Host: cluster.Options{ControllerManager: true}, Member: cluster.Options{ControllerManager: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cf.Stop)
	if err := cf.Host.InstallCRDs(ctx, fedtest.CRDDir()); err != nil {
		t.Fatal(err)
	}
	h, err := client.New(cf.Host.Config(), client.Options{Scheme: fedtest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	f := &fedtest.Federation{Federation: cf, Host: h, Scheme: fedtest.Scheme()}
	if err := f.Register(ctx, cf.Members[0], fedtest.Options{}); err != nil {
		t.Fatal(err)
	}
	markReady(ctx, t, h, "member1")
	mem := cf.Members[0].Clientset()

	const defaultClass = "storageclass.kubernetes.io/is-default-class"
	must(t, h.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "host-fast",
		Annotations: map[string]string{defaultClass: "true"}}, Provisioner: "example.com/host"}))
	if _, err := mem.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "member-standard",
		Annotations: map[string]string{defaultClass: "true"}}, Provisioner: "example.com/member"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	startPropagation(t, cf.Host.Config(), nil)

	must(t, h.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}))
	must(t, h.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "bot"}}))
	must(t, h.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "bot-token",
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "bot"}}, Type: corev1.SecretTypeServiceAccountToken}))
	claim := func(name string, class *string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: class,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	}
	must(t, h.Create(ctx, claim("data", nil)))
	must(t, h.Create(ctx, claim("chosen", ptr.To("host-fast"))))
	var hostToken []byte
	eventually(t, "host token controller fills the secret", func() error {
		var s corev1.Secret
		must(t, h.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "bot-token"}, &s))
		if hostToken = s.Data[corev1.ServiceAccountTokenKey]; len(hostToken) == 0 {
			return fmt.Errorf("no token yet")
		}
		return nil
	})
	var hostClaim corev1.PersistentVolumeClaim
	must(t, h.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "data"}, &hostClaim))
	if cls := ptr.Deref(hostClaim.Spec.StorageClassName, ""); cls != "host-fast" {
		t.Fatalf("the host's admission gave the claim class %q, want its default host-fast: the test proves nothing", cls)
	}

	deploy := webDeployment("demo", 1)
	deploy.Spec.Template.Spec.ServiceAccountName = "bot"
	deploy.Spec.Template.Spec.Volumes = []corev1.Volume{
		{Name: "tok", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "bot-token"}}},
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		{Name: "chosen", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "chosen"}}},
	}
	must(t, h.Create(ctx, deploy))
	b := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: names.Binding("Deployment", "web")},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource:      workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo", Name: "web", UID: deploy.UID},
			Replicas:      1,
			PropagateDeps: true,
			Clusters:      []workv1alpha1.TargetCluster{{Name: "member1", Replicas: 1}},
		},
	}
	must(t, h.Create(ctx, b))

	// The member's Secret is watched for a while: one the member's token controller rejects is deleted, and
	// fedmesh makes it again.
	var uids []types.UID
	var got *corev1.Secret
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if s, err := mem.CoreV1().Secrets("demo").Get(ctx, "bot-token", metav1.GetOptions{}); err == nil {
			got = s
			if len(uids) == 0 || uids[len(uids)-1] != s.UID {
				uids = append(uids, s.UID)
			}
		}
	}
	if got == nil {
		t.Fatal("the token Secret never reached the member")
	}
	if string(got.Data[corev1.ServiceAccountTokenKey]) == string(hostToken) {
		t.Errorf("the member's Secret carries the HOST's service-account token (a credential of the host cluster)")
	}
	if len(got.Data[corev1.ServiceAccountTokenKey]) == 0 {
		t.Errorf("the member's token controller did not fill the Secret")
	}
	memberSA, err := mem.CoreV1().ServiceAccounts("demo").Get(ctx, "bot", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations[corev1.ServiceAccountUIDKey] != string(memberSA.UID) {
		t.Errorf("the member's Secret names service account UID %s, the member's is %s", got.Annotations[corev1.ServiceAccountUIDKey], memberSA.UID)
	}
	if len(uids) > 2 {
		t.Errorf("the member's token Secret was deleted and made again %d times in 30s", len(uids)-1)
	}
	for name, want := range map[string]string{"data": "member-standard", "chosen": "host-fast"} {
		pvc, err := mem.CoreV1().PersistentVolumeClaims("demo").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cls := ptr.Deref(pvc.Spec.StorageClassName, ""); cls != want {
			t.Errorf("member PVC %s has storageClassName %q, want %q", name, cls, want)
		}
	}
}

// startPropagation runs every stage from a binding to its members' objects and back against the host cfg reaches:
// binding (recording its events in events, when given), binding status, execution and Work status.
func startPropagation(t *testing.T, cfg *rest.Config, events *fedtest.Events) {
	t.Helper()
	fedtest.StartManager(t, cfg, func(mgr ctrl.Manager) error {
		chain := interpreter.Layers{Native: native.New()}.Chain()
		renderings := &rendering.Store{}
		members := &member.Factory{Host: mgr.GetAPIReader()}
		applied := &verdicts.Store{Type: workv1alpha1.WorkApplied}
		stage := &Reconciler{Client: mgr.GetClient(), Interpreter: chain, Renderings: renderings}
		if events != nil {
			stage.Recorder = events
		}
		for _, s := range []interface{ SetupWithManager(ctrl.Manager) error }{
			stage,
			&status.BindingReconciler{Client: mgr.GetClient(), Aggregator: chain, Renderings: renderings},
			&execution.Reconciler{Client: mgr.GetClient(), Members: members, Retainer: chain, Verdicts: applied,
				Recorder: fedtest.Recorder(t, mgr, "execution"), Timeout: 5 * time.Second},
			&status.WorkReconciler{Client: mgr.GetClient(), Members: members, Verdicts: applied, Interpreter: chain, SyncPoll: 200 * time.Millisecond},
		} {
			if err := s.SetupWithManager(mgr); err != nil {
				return err
			}
		}
		return nil
	})
}

// markReady marks the Cluster called name Ready in the host, as the cluster stage would.
func markReady(ctx context.Context, t *testing.T, h client.Client, name string) {
	t.Helper()
	var c clusterv1alpha1.Cluster
	must(t, h.Get(ctx, client.ObjectKey{Name: name}, &c))
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue, Reason: "Test"})
	must(t, h.Status().Update(ctx, &c))
}

// A claim the host's volume controller bound reaches a member as a new claim, against a member with its controller
// manager: without the host's volume and without the annotations that say it was bound, which would make the
// member's volume controller take it for a bound claim that lost its volume (phase Lost, never provisioned).
func TestBoundClaimPropagatesUnbound(t *testing.T) {
	f := fedtest.Start(t, fedtest.Options{Members: 1, Workloads: true})
	ctx := context.Background()
	h := f.Host
	mem := f.Members[0].Clientset()
	cluster := f.Members[0].Name()
	markReady(ctx, t, h, cluster)
	must(t, h.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "data"}}))
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "data", Name: "db", Annotations: map[string]string{
			"pv.kubernetes.io/bind-completed":               "yes",
			"pv.kubernetes.io/bound-by-controller":          "yes",
			"volume.beta.kubernetes.io/storage-provisioner": "example.com/provisioner",
			"volume.kubernetes.io/storage-provisioner":      "example.com/provisioner",
			"volume.kubernetes.io/selected-node":            "host-node-1",
			"example.com/owner":                             "team-a",
		}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeName:  "pvc-0a1b2c3d-host",
		},
	}
	must(t, h.Create(ctx, pvc))
	startPropagation(t, f.Federation.Host.Config(), nil)
	must(t, h.Create(ctx, &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "data", Name: names.Binding("PersistentVolumeClaim", "db")},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: "data", Name: "db", UID: pvc.UID},
			Clusters: []workv1alpha1.TargetCluster{{Name: cluster}},
		},
	}))
	fedtest.Eventually(t, 60*time.Second, "the claim in "+cluster, func() error {
		_, err := mem.CoreV1().PersistentVolumeClaims("data").Get(ctx, "db", metav1.GetOptions{})
		return err
	})
	// The member's volume controller syncs a new claim at once, and every 15s after; a few seconds show its verdict.
	time.Sleep(10 * time.Second)
	got, err := mem.CoreV1().PersistentVolumeClaims("data").Get(ctx, "db", metav1.GetOptions{})
	must(t, err)
	if got.Status.Phase == corev1.ClaimLost || got.Spec.VolumeName != "" {
		t.Errorf("%s's new claim: phase %s, volumeName %q, annotations %v", cluster, got.Status.Phase, got.Spec.VolumeName, got.Annotations)
	}
	for _, k := range []string{"pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller", "volume.kubernetes.io/selected-node"} {
		if v, ok := got.Annotations[k]; ok {
			t.Errorf("%s's claim carries the host's %s: %q", cluster, k, v)
		}
	}
	if got.Annotations["example.com/owner"] != "team-a" {
		t.Errorf("%s's claim lost the template's own annotation: %v", cluster, got.Annotations)
	}
}
