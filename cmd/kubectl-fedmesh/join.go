package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

// memberFlags locate a member cluster. --kubeconfig is the member's here, never the host's (that is
// --host-kubeconfig), as in the issue's `join NAME --kubeconfig MEMBER.kubeconfig`.
type memberFlags struct {
	kubeconfig     string
	context        string
	requestTimeout time.Duration
}

func (f *memberFlags) addFlags(cmd *cobra.Command, usage string) {
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", usage)
	cmd.Flags().StringVar(&f.context, "member-context", "", "context of the member's --kubeconfig to use; default its current context")
	cmd.Flags().DurationVar(&f.requestTimeout, "request-timeout", 30*time.Second,
		"how long to wait for one answer of the member before giving up on it (0: no limit)")
}

type joinOptions struct {
	host         *hostOptions
	member       memberFlags
	tokenTimeout time.Duration
}

func newJoinCommand(host *hostOptions) *cobra.Command {
	o := &joinOptions{host: host}
	cmd := &cobra.Command{
		Use:   "join NAME --kubeconfig MEMBER_KUBECONFIG",
		Short: "Register a member cluster with the federation",
		Long: `Register the cluster of --kubeconfig as member NAME of the federation in the host (--host-kubeconfig).

In the member, join creates namespace ` + names.SystemNamespace + `, ServiceAccount ` + memberServiceAccount + `, ClusterRole and
ClusterRoleBinding ` + memberClusterRole + ` (what the federator needs: get, list, watch, create, patch and delete on every
resource, since a policy may propagate any kind; bind and escalate on roles and cluster roles, so that propagated
RBAC may grant what the identity does not hold itself; and the health and discovery endpoints) and a
long-lived token Secret. That identity is as strong as cluster-admin in effect: it may widen its own role.
In the host it creates Secret ` + names.SystemNamespace + `/NAME (keys token and caBundle, labelled
` + managedByLabel + `=` + managedBy + `) and the Push-mode Cluster NAME, whose apiEndpoint is the member
kubeconfig's server, and proxyURL its proxy-url. A kubeconfig whose server is not https, or with tls-server-name, is
refused: a Cluster cannot carry them. So is a NAME whose Secret join did not make and no Cluster NAME names (another's,
the chart's certificates say), and one whose Secret another Cluster names (its credentials, which join would
overwrite: a Cluster copied from NAME's shares its Secret, and unjoin of NAME kept it).

Running join again brings everything up to date. A Cluster NAME that already stands for another cluster (another
kube-system UID) is an error: unjoin it first. So is a cluster already joined under another name, and the host
itself: one cluster is one member.`,
		Example: `  kubectl-fedmesh join member1 --kubeconfig member1.kubeconfig
  kubectl-fedmesh --host-kubeconfig host.kubeconfig join member1 --kubeconfig member1.kubeconfig --member-context admin`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validateClusterName(args[0]); err != nil {
				return err
			}
			if o.member.kubeconfig == "" {
				return errors.New("--kubeconfig (the member's kubeconfig) is required")
			}
			return o.run(cmd, args[0])
		},
	}
	o.member.addFlags(cmd, "kubeconfig of the member cluster to join (required); the host's is --host-kubeconfig")
	cmd.Flags().DurationVar(&o.tokenTimeout, "token-timeout", 30*time.Second,
		"how long to wait for the member's token controller to fill the token Secret before falling back to a one-year token")
	return cmd
}

func validateClusterName(name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("cluster name %q: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

func (o *joinOptions) run(cmd *cobra.Command, name string) error {
	ctx := cmd.Context()
	memberCfg, kube, err := o.member.client()
	if err != nil {
		return err
	}
	entry, err := o.member.clusterEntry()
	if err != nil {
		return err
	}
	if err := httpsEndpoint(memberCfg.Host); err != nil {
		return err
	}
	if entry.TLSServerName != "" {
		return fmt.Errorf("member kubeconfig: tls-server-name %s: a Cluster cannot carry a TLS server name, so the federation "+
			"would not reach the member as --kubeconfig does; use a kubeconfig whose server's certificate is valid for its address", entry.TLSServerName)
	}
	id, err := clusterID(ctx, kube)
	if err != nil {
		return fmt.Errorf("member cluster: %w", err)
	}
	caBundle, err := caBundle(memberCfg)
	if err != nil {
		return err
	}
	host, err := o.host.client()
	if err != nil {
		return err
	}
	// Refuse before touching the member if NAME is taken by another cluster.
	var existing clusterv1alpha1.Cluster
	err = host.Get(ctx, client.ObjectKey{Name: name}, &existing)
	switch {
	case err == nil && !existing.DeletionTimestamp.IsZero():
		return fmt.Errorf("cluster %s is being deleted (an unjoin that has not finished): finish it with unjoin first", name)
	case err == nil:
		if other := otherCluster(&existing, id, memberCfg.Host); other != "" {
			return fmt.Errorf("cluster %s is already registered for another cluster (%s): unjoin it first or pick another name", name, other)
		}
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("host: cluster %s: %w", name, err)
	}
	if err := o.refuseJoined(ctx, host, name, id, memberCfg.Host); err != nil {
		return err
	}
	if err := refuseForeignSecret(ctx, host, name, &existing); err != nil {
		return err
	}

	identity := &memberIdentity{kube: kube, tokenTimeout: o.tokenTimeout, warnings: cmd.ErrOrStderr()}
	token, err := identity.ensure(ctx)
	if err != nil {
		return err
	}
	if err := registerInHost(ctx, host, name, clusterv1alpha1.ClusterSpec{
		ID:                          id,
		SyncMode:                    clusterv1alpha1.Push,
		APIEndpoint:                 memberCfg.Host,
		SecretRef:                   &clusterv1alpha1.LocalSecretReference{Namespace: names.SystemNamespace, Name: name},
		InsecureSkipTLSVerification: memberCfg.Insecure,
		ProxyURL:                    entry.ProxyURL,
	}, token, caBundle); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "cluster %s joined: endpoint %s, identity %s/%s, credentials in secret %s/%s\n",
		name, memberCfg.Host, names.SystemNamespace, memberServiceAccount, names.SystemNamespace, name)
	return nil
}

// refuseJoined refuses a cluster that is the host, or already a member under another name than name: two Clusters
// for one cluster apply the same objects twice, and share the identity in it.
func (o *joinOptions) refuseJoined(ctx context.Context, host client.Client, name, id, endpoint string) error {
	hostCfg, err := o.host.config()
	if err != nil {
		return err
	}
	hostKube, err := kubernetes.NewForConfig(hostCfg)
	if err != nil {
		return fmt.Errorf("host cluster: %w", err)
	}
	hostID, err := clusterID(ctx, hostKube)
	if err != nil {
		return fmt.Errorf("host cluster: %w", err)
	}
	if id == hostID {
		return fmt.Errorf("--kubeconfig reaches the host itself (kube-system UID %s): the host cannot be its own member; check --kubeconfig and --member-context", id)
	}
	joined, err := registeredAs(ctx, host, id, endpoint, name)
	if err != nil {
		return err
	}
	if joined != "" {
		return fmt.Errorf("the cluster of --kubeconfig is already joined as %s (kube-system UID %s): join it again as %s, or unjoin %s first; "+
			"check --kubeconfig and --member-context if it is not the cluster you meant", joined, id, joined, joined)
	}
	return nil
}

// httpsEndpoint refuses a member kubeconfig server that a Cluster's apiEndpoint cannot be (an https URL with a
// host), before join changes anything: the host would refuse the Cluster after the identity and the Secret exist.
func httpsEndpoint(server string) error {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("member kubeconfig: server %q: the federation reaches members over https only (a Cluster's apiEndpoint "+
			"is an https URL, e.g. https://10.0.0.1:6443); use the https address of the member's API server", server)
	}
	return nil
}

// refuseForeignSecret refuses to write the credentials over a Secret NAME that is not cluster NAME's: one join did
// not make (it has not join's label) unless Cluster NAME, if it was found (existing has a UID), names it (an older
// join's Secret); and one that another Cluster names, whose credentials it holds.
func refuseForeignSecret(ctx context.Context, host client.Client, name string, existing *clusterv1alpha1.Cluster) error {
	var secret corev1.Secret
	switch err := host.Get(ctx, client.ObjectKey{Namespace: names.SystemNamespace, Name: name}, &secret); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("host: secret %s/%s: %w", names.SystemNamespace, name, err)
	}
	namesIt := func(c *clusterv1alpha1.Cluster) bool {
		ref := c.Spec.SecretRef
		return ref != nil && ref.Namespace == secret.Namespace && ref.Name == secret.Name
	}
	if secret.Labels[managedByLabel] != managedBy && (existing.UID == "" || !namesIt(existing)) {
		return fmt.Errorf("secret %s/%s exists and is not a join's (no label %s=%s, no Cluster %s names it): pick another name, "+
			"or delete the Secret if it is a join's left behind", secret.Namespace, name, managedByLabel, managedBy, name)
	}
	var clusters clusterv1alpha1.ClusterList
	if err := host.List(ctx, &clusters); err != nil {
		return fmt.Errorf("host: list clusters: %w", err)
	}
	for i := range clusters.Items {
		if other := &clusters.Items[i]; other.Name != name && namesIt(other) {
			return fmt.Errorf("secret %s/%s holds the credentials of cluster %s (its secretRef names it), which join would overwrite: "+
				"pick another name, or give cluster %s a Secret of its own first", secret.Namespace, name, other.Name, other.Name)
		}
	}
	return nil
}

// caBundle is the CA of the member kubeconfig; empty means the system's roots verify the member.
func caBundle(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 {
		return cfg.CAData, nil
	}
	if cfg.CAFile != "" {
		data, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("member kubeconfig: certificate-authority: %w", err)
		}
		return data, nil
	}
	return nil, nil
}

// client is the config of the member the flags name, each request limited to --request-timeout, and a client;
// it does not talk to the member yet.
func (f memberFlags) client() (*rest.Config, kubernetes.Interface, error) {
	cfg, err := loadKubeconfig(f.kubeconfig, f.context)
	if err != nil {
		return nil, nil, fmt.Errorf("member cluster: %w", err)
	}
	cfg.Timeout = f.requestTimeout
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("member cluster: %w", err)
	}
	return cfg, kube, nil
}

// clusterEntry is the cluster entry of the member kubeconfig's context, as written: the fields a rest.Config
// keeps only in a form a Cluster cannot take (proxy-url) or not at all.
func (f memberFlags) clusterEntry() (*clientcmdapi.Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: f.context}).RawConfig()
	if err != nil {
		return nil, fmt.Errorf("member cluster: load kubeconfig: %w", err)
	}
	name := f.context
	if name == "" {
		name = raw.CurrentContext
	}
	kctx, ok := raw.Contexts[name]
	if !ok {
		return nil, fmt.Errorf("member cluster: load kubeconfig: context %q not found", name)
	}
	c, ok := raw.Clusters[kctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("member cluster: load kubeconfig: cluster %q of context %q not found", kctx.Cluster, name)
	}
	return c, nil
}

// otherCluster says how registered Cluster c differs from the cluster of id (see clusterID) at endpoint, or "" when
// it is that cluster: by ID when c has one, else by endpoint (c was registered by other means, without an ID).
func otherCluster(c *clusterv1alpha1.Cluster, id, endpoint string) string {
	switch {
	case c.Spec.ID != "" && c.Spec.ID != id:
		return fmt.Sprintf("id %s, this one is %s", c.Spec.ID, id)
	case c.Spec.ID == "" && c.Spec.APIEndpoint != endpoint:
		return fmt.Sprintf("endpoint %s, this one is %s", c.Spec.APIEndpoint, endpoint)
	}
	return ""
}

// clusterID is the UID of a cluster's kube-system namespace: it tells a re-join of the same cluster from another
// cluster under a taken name, and one cluster joined under two names.
func clusterID(ctx context.Context, kube kubernetes.Interface) (string, error) {
	ns, err := kube.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read namespace kube-system: %w", err)
	}
	return string(ns.UID), nil
}

// registerInHost creates or updates the credentials Secret and the Cluster; other fields of an existing Cluster
// (labels, region, taints, ...) are kept, and its proxyURL when spec has none.
func registerInHost(ctx context.Context, host client.Client, name string, spec clusterv1alpha1.ClusterSpec, token string, caBundle []byte) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names.SystemNamespace}}
	if err := host.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("host: namespace %s: %w", names.SystemNamespace, err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: names.SystemNamespace, Name: name}}
	data := map[string][]byte{clusterv1alpha1.SecretTokenKey: []byte(token), clusterv1alpha1.SecretCADataKey: caBundle}
	if err := createOrUpdate(ctx, host, secret, func() {
		secret.Data = data
		metav1.SetMetaDataLabel(&secret.ObjectMeta, managedByLabel, managedBy) // what unjoin may delete without a Cluster
	}); err != nil {
		return fmt.Errorf("host: secret %s/%s: %w", names.SystemNamespace, name, err)
	}
	c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := createOrUpdate(ctx, host, c, func() {
		c.Spec.ID, c.Spec.SyncMode, c.Spec.APIEndpoint = spec.ID, spec.SyncMode, spec.APIEndpoint
		c.Spec.SecretRef, c.Spec.InsecureSkipTLSVerification = spec.SecretRef, spec.InsecureSkipTLSVerification
		if spec.ProxyURL != "" { // a proxy set on the Cluster by other means stays when the kubeconfig names none
			c.Spec.ProxyURL = spec.ProxyURL
		}
	}); err != nil {
		return fmt.Errorf("host: cluster %s: %w", name, err)
	}
	return nil
}

// createOrUpdate reads obj (by its name), applies set and creates or updates it.
func createOrUpdate(ctx context.Context, c client.Client, obj client.Object, set func()) error {
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		set()
		return c.Create(ctx, obj)
	}
	if err != nil {
		return err
	}
	set()
	return c.Update(ctx, obj)
}
