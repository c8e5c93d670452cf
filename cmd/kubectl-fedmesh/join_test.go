package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
	"github.com/fedmesh/fedmesh/test/cluster"
	"github.com/fedmesh/fedmesh/test/fedtest"
)

func TestOtherCluster(t *testing.T) {
	for _, tc := range []struct {
		name     string
		spec     clusterv1alpha1.ClusterSpec
		want     string // a part of the answer; "" for the same cluster
		endpoint string
	}{
		{"same id", clusterv1alpha1.ClusterSpec{ID: "a", APIEndpoint: "https://old:6443"}, "", "https://new:6443"},
		{"another id", clusterv1alpha1.ClusterSpec{ID: "b", APIEndpoint: "https://x:6443"}, "id b, this one is a", "https://x:6443"},
		{"no id, same endpoint", clusterv1alpha1.ClusterSpec{APIEndpoint: "https://x:6443"}, "", "https://x:6443"},
		{"no id, another endpoint", clusterv1alpha1.ClusterSpec{APIEndpoint: "https://y:6443"}, "endpoint https://y:6443, this one is https://x:6443", "https://x:6443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := otherCluster(&clusterv1alpha1.Cluster{Spec: tc.spec}, "a", tc.endpoint)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("otherCluster = %q, want %q", got, tc.want)
			}
		})
	}
}

// unjoin holds the deleted Cluster until its Works, which it deletes, are gone (the execution stage lets them go
// once their objects are off the member), then deletes its credentials Secret and lets it go; Works that stay past
// --timeout stop it with the Cluster still held, unless --force. The Secret goes before the Cluster: an unjoin
// that stops between the two leaves the Cluster held, to unjoin again, not the Secret alone.
func TestUnjoinUnregister(t *testing.T) {
	for _, tc := range []struct {
		name          string
		worksLeave    bool
		force         bool
		secretRefused bool // the host refuses to delete the Secret
		// secretForbidden: the user may not delete it; the Cluster goes all the same, with a warning, its Secret
		// left (holding the Cluster would only keep its name).
		secretForbidden bool
		wantErr         string
		wantCluster     bool // still there, held, and its Secret with it
	}{
		{name: "works leave", worksLeave: true},
		{name: "works stay", wantErr: "1 Work (shop/web-deployment-m1) of cluster m1 still there", wantCluster: true},
		{name: "works stay, forced", force: true},
		{name: "the Secret cannot be deleted", worksLeave: true, secretRefused: true, wantErr: "host: delete secret fedmesh-system/m1", wantCluster: true},
		{name: "the Secret may not be deleted", worksLeave: true, secretForbidden: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: names.SystemNamespace, Name: "m1"}}
			c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m1"}, Spec: clusterv1alpha1.ClusterSpec{
				SecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: secret.Namespace, Name: secret.Name}}}
			work := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment-m1",
				Labels: map[string]string{names.ClusterLabel: "m1"}, Finalizers: []string{names.ExecutionFinalizer}},
				Spec: workv1alpha1.WorkSpec{ClusterName: "m1"}}
			other := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment-m2",
				Labels: map[string]string{names.ClusterLabel: "m2"}}, Spec: workv1alpha1.WorkSpec{ClusterName: "m2"}}
			host := fake.NewClientBuilder().WithScheme(fedtest.Scheme()).WithObjects(c, work, other, secret.DeepCopy()).
				WithInterceptorFuncs(interceptor.Funcs{Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
					if _, ok := obj.(*corev1.Secret); ok && tc.secretRefused {
						return apierrors.NewServiceUnavailable("etcd is down")
					}
					if _, ok := obj.(*corev1.Secret); ok && tc.secretForbidden {
						return apierrors.NewForbidden(corev1.Resource("secrets"), obj.GetName(), errors.New("no delete for you"))
					}
					return cl.Delete(ctx, obj, opts...)
				}}).Build()
			o := &unjoinOptions{timeout: 300 * time.Millisecond, poll: 10 * time.Millisecond, force: tc.force}
			if tc.worksLeave {
				go func() {
					// The execution stage, once the Work is deleted: its objects are off the member.
					for {
						var cur workv1alpha1.Work
						if host.Get(ctx, client.ObjectKeyFromObject(work), &cur) == nil && !cur.DeletionTimestamp.IsZero() {
							cur.Finalizers = nil
							_ = host.Update(ctx, &cur)
							return
						}
						time.Sleep(5 * time.Millisecond)
					}
				}()
			}
			var out bytes.Buffer
			err := o.unregister(ctx, &out, host, c.DeepCopy(), secret.DeepCopy())
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("unregister: %v, want %q", err, tc.wantErr)
			}
			var cur clusterv1alpha1.Cluster
			err = host.Get(ctx, client.ObjectKey{Name: "m1"}, &cur)
			if tc.wantCluster != (err == nil) {
				t.Fatalf("cluster after unregister: %v, finalizers %v; want it there: %v", err, cur.Finalizers, tc.wantCluster)
			}
			if err := host.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{}); (tc.wantCluster || tc.secretForbidden) != (err == nil) {
				t.Errorf("secret after unregister: %v; want it there: %v", err, tc.wantCluster || tc.secretForbidden)
			}
			if tc.secretForbidden && !strings.Contains(out.String(), "warning: leaving secret fedmesh-system/m1") {
				t.Errorf("output %q, want a warning that the Secret is left", out.String())
			}
			if tc.wantCluster && (cur.DeletionTimestamp.IsZero() || !slices.Contains(cur.Finalizers, names.UnjoinFinalizer)) {
				t.Errorf("cluster left %v, finalizers %v; want it being deleted and held", cur.DeletionTimestamp, cur.Finalizers)
			}
			if tc.force && !strings.Contains(out.String(), "warning: leaving the objects of 1 Work") {
				t.Errorf("output %q, want the warning", out.String())
			}
			var left workv1alpha1.Work
			if err := host.Get(ctx, client.ObjectKeyFromObject(work), &left); tc.worksLeave != apierrors.IsNotFound(err) ||
				!tc.worksLeave && left.DeletionTimestamp.IsZero() {
				t.Errorf("the cluster's Work after drain: %v, deleting since %v", err, left.DeletionTimestamp)
			}
			var kept workv1alpha1.Work
			if err := host.Get(ctx, client.ObjectKeyFromObject(other), &kept); err != nil || !kept.DeletionTimestamp.IsZero() {
				t.Errorf("another cluster's Work: %v, deleting since %v", err, kept.DeletionTimestamp)
			}
		})
	}
}

// One cluster is one member: join refuses a cluster already joined under another name, and the host itself;
// unjoin of a second Cluster for the same cluster (registered before join refused it) keeps the identity that the
// first still uses.
func TestJoinSameClusterTwice(t *testing.T) {
	ctx := context.Background()
	host := cluster.New(t, cluster.Options{Name: "host"})
	if err := host.InstallCRDs(ctx, fedtest.CRDDir()); err != nil {
		t.Fatal(err)
	}
	member := cluster.New(t, cluster.Options{Name: "member", ControllerManager: true})
	hk := host.Kubeconfig()
	hostClient, err := client.New(host.Config(), client.Options{Scheme: fedtest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	mustFedmesh(t, hk, "join", "member1", "--kubeconfig", member.Kubeconfig())

	_, errOut, code := fedmesh(t, hk, "join", "member1-again", "--kubeconfig", member.Kubeconfig())
	if code == 0 || !strings.Contains(errOut, "already joined as member1") {
		t.Errorf("join member1-again with member1's kubeconfig: exit %d, %q; want it refused, naming member1", code, errOut)
	}
	if err := hostClient.Get(ctx, client.ObjectKey{Name: "member1-again"}, &clusterv1alpha1.Cluster{}); !apierrors.IsNotFound(err) {
		t.Errorf("cluster member1-again after the refused join: %v, want not found", err)
	}
	_, errOut, code = fedmesh(t, hk, "join", "itself", "--kubeconfig", hk, "--token-timeout", "1s")
	if code == 0 || !strings.Contains(errOut, "the host itself") {
		t.Errorf("join the host as a member: exit %d, %q; want it refused", code, errOut)
	}
	if err := hostClient.Get(ctx, client.ObjectKey{Name: "itself"}, &clusterv1alpha1.Cluster{}); !apierrors.IsNotFound(err) {
		t.Errorf("cluster itself after the refused join: %v, want not found", err)
	}

	// A second Cluster for member1's cluster, as an older kubectl-fedmesh joined it: unjoining it keeps the identity.
	var member1 clusterv1alpha1.Cluster
	if err := hostClient.Get(ctx, client.ObjectKey{Name: "member1"}, &member1); err != nil {
		t.Fatal(err)
	}
	copied := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1-copy"}, Spec: member1.Spec}
	if err := hostClient.Create(ctx, copied); err != nil {
		t.Fatal(err)
	}
	out := mustFedmesh(t, hk, "unjoin", "member1-copy", "--kubeconfig", member.Kubeconfig())
	if !strings.Contains(out, "member1 still uses it") {
		t.Errorf("unjoin member1-copy: %q, want it to say member1 keeps the identity", out)
	}
	admin := member.Clientset()
	if _, err := admin.CoreV1().ServiceAccounts(names.SystemNamespace).Get(ctx, memberServiceAccount, metav1.GetOptions{}); err != nil {
		t.Errorf("member service account after unjoin member1-copy: %v, want it kept for member1", err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, memberClusterRole, metav1.GetOptions{}); err != nil {
		t.Errorf("member cluster role binding after unjoin member1-copy: %v, want it kept for member1", err)
	}
	var secret corev1.Secret
	if err := hostClient.Get(ctx, client.ObjectKey{Namespace: names.SystemNamespace, Name: "member1"}, &secret); err != nil {
		t.Fatal(err)
	}
	asMember1 := kubernetes.NewForConfigOrDie(&rest.Config{Host: member.Host(), BearerToken: string(secret.Data[clusterv1alpha1.SecretTokenKey]),
		TLSClientConfig: rest.TLSClientConfig{CAData: member.CAData()}})
	if err := asMember1.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
		t.Errorf("/readyz with member1's token after unjoin member1-copy: %v", err)
	}

	// join goes through the member kubeconfig's proxy-url, and so does the federation: the Cluster gets it. A join
	// without one leaves it.
	proxy, tunnels := connectProxy(t)
	raw, err := clientcmd.LoadFromFile(member.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range raw.Clusters {
		c.ProxyURL = proxy
	}
	proxied := filepath.Join(t.TempDir(), "member-via-proxy.kubeconfig")
	if err := clientcmd.WriteToFile(*raw, proxied); err != nil {
		t.Fatal(err)
	}
	mustFedmesh(t, hk, "join", "member1", "--kubeconfig", proxied)
	if err := hostClient.Get(ctx, client.ObjectKey{Name: "member1"}, &member1); err != nil || member1.Spec.ProxyURL != proxy || tunnels.Load() == 0 {
		t.Errorf("join member1 through proxy-url %s: %v, spec.proxyURL %q, %d tunnels; want the proxy in the Cluster, join through it",
			proxy, err, member1.Spec.ProxyURL, tunnels.Load())
	}
	mustFedmesh(t, hk, "join", "member1", "--kubeconfig", member.Kubeconfig())
	if err := hostClient.Get(ctx, client.ObjectKey{Name: "member1"}, &member1); err != nil || member1.Spec.ProxyURL != proxy {
		t.Errorf("join member1 without proxy-url: %v, spec.proxyURL %q; want %q kept", err, member1.Spec.ProxyURL, proxy)
	}
	// A Cluster has no TLS server name: a kubeconfig that needs one is refused.
	for _, c := range raw.Clusters {
		c.ProxyURL, c.TLSServerName = "", "kubernetes.default"
	}
	named := filepath.Join(t.TempDir(), "member-tls-server-name.kubeconfig")
	if err := clientcmd.WriteToFile(*raw, named); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := fedmesh(t, hk, "join", "member1", "--kubeconfig", named); code == 0 || !strings.Contains(errOut, "tls-server-name") {
		t.Errorf("join with tls-server-name: exit %d, %q; want it refused", code, errOut)
	}

	// The last Cluster for it takes the identity along.
	mustFedmesh(t, hk, "unjoin", "member1", "--kubeconfig", member.Kubeconfig())
	if _, err := admin.CoreV1().ServiceAccounts(names.SystemNamespace).Get(ctx, memberServiceAccount, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("member service account after unjoin member1: %v, want it gone", err)
	}

	// A join's Secret that another Cluster still names (unjoin of its own Cluster kept it for that one): joining
	// its name again would overwrite the other Cluster's credentials.
	shared := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: names.SystemNamespace, Name: "shared", Labels: map[string]string{managedByLabel: managedBy}},
		Data: map[string][]byte{clusterv1alpha1.SecretTokenKey: []byte("borrower-token"), clusterv1alpha1.SecretCADataKey: []byte("CA")}}
	borrower := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "borrower"}, Spec: clusterv1alpha1.ClusterSpec{
		SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1",
		SecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: names.SystemNamespace, Name: shared.Name}}}
	for _, obj := range []client.Object{shared, borrower} {
		if err := hostClient.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	_, errOut, code = fedmesh(t, hk, "join", "shared", "--kubeconfig", member.Kubeconfig())
	if code == 0 || !strings.Contains(errOut, "secret fedmesh-system/shared holds the credentials of cluster borrower") {
		t.Errorf("join shared, whose Secret cluster borrower names: exit %d, %q; want it refused, naming borrower", code, errOut)
	}
	var after corev1.Secret
	if err := hostClient.Get(ctx, client.ObjectKeyFromObject(shared), &after); err != nil || string(after.Data[clusterv1alpha1.SecretTokenKey]) != "borrower-token" {
		t.Errorf("secret shared after the refused join: %v, borrower's token kept %v; want it kept",
			err, string(after.Data[clusterv1alpha1.SecretTokenKey]) == "borrower-token")
	}
	if _, err := admin.CoreV1().ServiceAccounts(names.SystemNamespace).Get(ctx, memberServiceAccount, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("member service account after the refused join: %v, want none made", err)
	}
}

// unjoin of a name with nothing to remove is an error, as kubectl delete's; it removes the registered Cluster's
// credentials, or with no Cluster those of a join that did not finish, never another Secret of that name; a member
// --kubeconfig cannot reach
// (gone, or never answering: each request gives up after --request-timeout) stops unjoin before anything changes,
// unless --force, which unjoins on the host and leaves the identity in the member.
func TestUnjoinUnknownOrUnreachable(t *testing.T) {
	ctx := context.Background()
	host := cluster.New(t, cluster.Options{Name: "host"})
	if err := host.InstallCRDs(ctx, fedtest.CRDDir()); err != nil {
		t.Fatal(err)
	}
	hk := host.Kubeconfig()
	hostClient, err := client.New(host.Config(), client.Options{Scheme: fedtest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	register := func(t *testing.T, name, endpoint string) {
		t.Helper()
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push, APIEndpoint: endpoint}}
		if err := hostClient.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	registered := func(name string) bool {
		err := hostClient.Get(ctx, client.ObjectKey{Name: name}, &clusterv1alpha1.Cluster{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}

	t.Run("a name never registered", func(t *testing.T) {
		out, errOut, code := fedmesh(t, hk, "unjoin", "membr1")
		if code != 1 || !strings.Contains(errOut, `cluster "membr1" not found`) || out != "" {
			t.Errorf("unjoin membr1: exit %d, %q, %q; want exit 1, not found", code, out, errOut)
		}
	})
	if err := hostClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names.SystemNamespace}}); err != nil {
		t.Fatal(err)
	}
	createSecret := func(t *testing.T, name string, labels map[string]string) *corev1.Secret {
		t.Helper()
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: names.SystemNamespace, Name: name, Labels: labels},
			Data: map[string][]byte{"key": []byte(name)}}
		if err := hostClient.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	secretLeft := func(t *testing.T, s *corev1.Secret) bool {
		t.Helper()
		err := hostClient.Get(ctx, client.ObjectKeyFromObject(s), &corev1.Secret{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	t.Run("the Secret of a join that did not finish", func(t *testing.T) {
		half := createSecret(t, "half", map[string]string{managedByLabel: managedBy})
		if out := mustFedmesh(t, hk, "unjoin", "half"); !strings.Contains(out, "cluster half unjoined") || secretLeft(t, half) {
			t.Errorf("unjoin half: %q, secret left %v; want it unjoined, the Secret gone", out, secretLeft(t, half))
		}
	})
	t.Run("a Secret join did not make, and no Cluster", func(t *testing.T) {
		// The chart's certificates live in the same namespace.
		certs := createSecret(t, "fedmesh-certs", map[string]string{"app.kubernetes.io/name": "fedmesh", managedByLabel: "Helm"})
		out, errOut, code := fedmesh(t, hk, "unjoin", "fedmesh-certs")
		if code != 1 || !strings.Contains(errOut, `cluster "fedmesh-certs" not found`) || out != "" || !secretLeft(t, certs) {
			t.Errorf("unjoin fedmesh-certs: exit %d, %q, %q, secret left %v; want exit 1, not found, the Secret kept", code, out, errOut, secretLeft(t, certs))
		}
	})
	// What an older join wrote (join's keys, no label), left once an older unjoin let its Cluster go and stopped
	// before it deleted the Secret; caBundle is empty where the system's roots verify the member.
	oldJoins := func(t *testing.T, name string, data map[string][]byte) *corev1.Secret {
		t.Helper()
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: names.SystemNamespace, Name: name}, Data: data}
		if err := hostClient.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	t.Run("an older join's Secret whose Cluster went", func(t *testing.T) {
		old := oldJoins(t, "oldjoin", map[string][]byte{clusterv1alpha1.SecretTokenKey: []byte("member-token"), clusterv1alpha1.SecretCADataKey: nil})
		out, errOut, code := fedmesh(t, hk, "unjoin", "oldjoin")
		if code != 0 || !strings.Contains(out, "cluster oldjoin unjoined") || secretLeft(t, old) {
			t.Errorf("unjoin oldjoin: exit %d, %q, %q, secret left %v; want it unjoined, the member's token gone from the host", code, out, errOut, secretLeft(t, old))
		}
	})
	for _, tc := range []struct {
		name, secret string
		data         map[string][]byte
		namedBy      string // a Cluster whose secretRef names the Secret
	}{
		{name: "an older join's Secret that another Cluster names", secret: "lent", namedBy: "borrower",
			data: map[string][]byte{clusterv1alpha1.SecretTokenKey: []byte("t"), clusterv1alpha1.SecretCADataKey: []byte("CA")}},
		{name: "a Secret with join's keys and more", secret: "more",
			data: map[string][]byte{clusterv1alpha1.SecretTokenKey: []byte("t"), clusterv1alpha1.SecretCADataKey: []byte("CA"), "tls.key": []byte("k")}},
		{name: "a Secret with a token only", secret: "tokenonly", data: map[string][]byte{clusterv1alpha1.SecretTokenKey: []byte("t")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := oldJoins(t, tc.secret, tc.data)
			if tc.namedBy != "" {
				c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: tc.namedBy}, Spec: clusterv1alpha1.ClusterSpec{
					SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1",
					SecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: names.SystemNamespace, Name: tc.secret}}}
				if err := hostClient.Create(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			out, errOut, code := fedmesh(t, hk, "unjoin", tc.secret)
			if code != 1 || !strings.Contains(errOut, `cluster "`+tc.secret+`" not found`) || out != "" || !secretLeft(t, s) {
				t.Errorf("unjoin %s: exit %d, %q, %q, secret left %v; want exit 1, not found, the Secret kept", tc.secret, code, out, errOut, secretLeft(t, s))
			}
		})
	}
	t.Run("a Cluster whose secretRef names another Secret than NAME", func(t *testing.T) {
		// Registered by other means, or by an older join, which did not label its Secret: the secretRef says.
		creds := createSecret(t, "byhand-credentials", nil)
		other := createSecret(t, "byhand", nil)
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "byhand"}, Spec: clusterv1alpha1.ClusterSpec{
			SyncMode: clusterv1alpha1.Push, APIEndpoint: "https://127.0.0.1:1",
			SecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: names.SystemNamespace, Name: creds.Name}}}
		if err := hostClient.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		out := mustFedmesh(t, hk, "unjoin", "byhand", "--timeout", "1s")
		if !strings.Contains(out, "cluster byhand unjoined") || registered("byhand") || secretLeft(t, creds) || !secretLeft(t, other) {
			t.Errorf("unjoin byhand: %q, registered %v, secretRef's Secret left %v, Secret byhand left %v; want the Cluster and its secretRef's Secret gone, the other kept",
				out, registered("byhand"), secretLeft(t, creds), secretLeft(t, other))
		}
	})
	t.Run("--member-context without --kubeconfig", func(t *testing.T) {
		register(t, "ctx", "https://127.0.0.1:1")
		_, errOut, code := fedmesh(t, hk, "unjoin", "ctx", "--member-context", "admin")
		if code == 0 || !strings.Contains(errOut, "--member-context is a context of the member's --kubeconfig") || !registered("ctx") {
			t.Errorf("unjoin --member-context alone: exit %d, %q, registered %v; want it refused, nothing changed", code, errOut, registered("ctx"))
		}
	})

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "https://" + l.Addr().String()
	l.Close()
	hung := hangingMember(t, false)
	for _, tc := range []struct{ name, endpoint string }{{"gone", gone}, {"hung", hung}} {
		t.Run("a member that is "+tc.name, func(t *testing.T) {
			register(t, tc.name, tc.endpoint)
			args := []string{"unjoin", tc.name, "--kubeconfig", testKubeconfig(t, tc.endpoint, nil), "--request-timeout", "1s", "--timeout", "1s"}
			start := time.Now()
			_, errOut, code := fedmesh(t, hk, args...)
			if code == 0 || !strings.Contains(errOut, "add --force") || !strings.Contains(errOut, "without --kubeconfig") || !registered(tc.name) {
				t.Errorf("unjoin %s: exit %d, %q, registered %v; want it refused, naming --force, nothing changed", tc.name, code, errOut, registered(tc.name))
			}
			out, errOut, code := fedmesh(t, hk, append(args, "--force")...)
			if code != 0 || !strings.Contains(errOut, "identity") || !strings.Contains(out, "identity in the member stays") || registered(tc.name) {
				t.Errorf("unjoin %s --force: exit %d, %q, %q, registered %v; want it unjoined, with a warning", tc.name, code, out, errOut, registered(tc.name))
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("unjoin %s twice with --request-timeout 1s took %s", tc.name, took.Round(time.Second))
			}
		})
	}
}

func TestHTTPSEndpoint(t *testing.T) {
	for server, want := range map[string]bool{
		"https://10.0.0.1:6443":      true,
		"https://member.example":     true,
		"http://127.0.0.1:8001":      false, // kubectl proxy's
		"10.0.0.1:6443":              false,
		"https://":                   false,
		"unix:///var/run/kube.sock":  false,
		"https://10.0.0.1:6443/base": true,
	} {
		if err := httpsEndpoint(server); (err == nil) != want {
			t.Errorf("%s: %v, want accepted %t", server, err, want)
		}
	}
}

// testKubeconfig is a kubeconfig for server (TLS unverified, a token), changed by mutate.
func testKubeconfig(t *testing.T, server string, mutate func(*clientcmdapi.Cluster)) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	c := clientcmdapi.NewCluster()
	c.Server, c.InsecureSkipTLSVerify = server, true
	if mutate != nil {
		mutate(c)
	}
	cfg.Clusters["m"] = c
	cfg.AuthInfos["m"] = &clientcmdapi.AuthInfo{Token: "x"}
	cfg.Contexts["m"] = &clientcmdapi.Context{Cluster: "m", AuthInfo: "m"}
	cfg.CurrentContext = "m"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// connectProxy is an HTTP CONNECT proxy on loopback that counts the tunnels it opened.
func connectProxy(t *testing.T) (string, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		up, err := net.Dial("tcp", r.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		n.Add(1)
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			up.Close()
			return
		}
		_, _ = conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
		go func() { _, _ = io.Copy(up, buf); up.Close() }()
		go func() { _, _ = io.Copy(conn, up); conn.Close() }()
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}
