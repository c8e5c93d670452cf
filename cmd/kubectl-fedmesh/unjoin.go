package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/work/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/federation/names"
)

type unjoinOptions struct {
	host    *hostOptions
	member  memberFlags
	timeout time.Duration
	force   bool
	poll    time.Duration
}

func newUnjoinCommand(host *hostOptions) *cobra.Command {
	o := &unjoinOptions{host: host, poll: time.Second}
	cmd := &cobra.Command{
		Use:   "unjoin NAME [--kubeconfig MEMBER_KUBECONFIG]",
		Short: "Remove a member cluster from the federation, and the federation's workloads from it",
		Long: `Remove member NAME. Its Cluster is deleted first, held by a finalizer while the federation takes its workloads
off the member: every Work of the cluster goes, and with it what the Work applied there (unless its policy
preserves resources on deletion). Then go the Secret with the cluster's credentials (the one the Cluster's
secretRef names, unless another Cluster names it too), the finalizer, and with it the Cluster. With no Cluster (a
join that did not finish, or an unjoin whose Cluster went without its Secret), the Secret ` + names.SystemNamespace + `/NAME
goes if join made it (it carries join's label ` + managedByLabel + `=` + managedBy + `, or, from a join older
than the label, join's keys ` + clusterv1alpha1.SecretTokenKey + ` and ` + clusterv1alpha1.SecretCADataKey + ` and no others) and no other Cluster names it; no other
Secret goes. With --kubeconfig, the identity join made in the member goes too (ServiceAccount, token Secret,
ClusterRole and ClusterRoleBinding; namespace ` + names.SystemNamespace + ` stays), after checking it reaches the cluster
registered as NAME; the identity stays while another Cluster is registered for the same cluster. A member --kubeconfig does not
reach (within --request-timeout) stops unjoin before anything changes; --force goes on without it, and leaves the
identity in the member. If Works remain after --timeout (the federator is down, say), nothing more is removed and
unjoin can be run again to wait longer; --force goes on, and leaves their objects in the member. What is already
gone is skipped; a NAME with nothing left to remove is an error (not found).`,
		Example: `  kubectl-fedmesh unjoin member1 --kubeconfig member1.kubeconfig
  kubectl-fedmesh unjoin member1 --timeout 10m`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validateClusterName(args[0]); err != nil {
				return err
			}
			if o.member.context != "" && o.member.kubeconfig == "" {
				return errors.New("--member-context is a context of the member's --kubeconfig: add --kubeconfig, or drop --member-context " +
					"(the host's context is --host-context)")
			}
			return o.run(cmd, args[0])
		},
	}
	o.member.addFlags(cmd, "kubeconfig of the member, to remove the federation's identity there too; the host's is --host-kubeconfig")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long to wait for the federation to take its workloads off the member")
	cmd.Flags().BoolVar(&o.force, "force", false,
		"if Works remain after --timeout, unjoin anyway and leave their objects in the member; if --kubeconfig does not reach the member, unjoin anyway and leave the identity there")
	return cmd
}

func (o *unjoinOptions) run(cmd *cobra.Command, name string) error {
	ctx := cmd.Context()
	host, err := o.host.client()
	if err != nil {
		return err
	}
	c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	registered := true
	if err := host.Get(ctx, client.ObjectKeyFromObject(c), c); apierrors.IsNotFound(err) {
		registered = false
	} else if err != nil {
		return fmt.Errorf("host: cluster %s: %w", name, err)
	}
	secret, err := credentials(ctx, host, name, c, registered)
	if err != nil {
		return err
	}
	var identity *memberIdentity
	var sharedWith string // another Cluster for the cluster of --kubeconfig, which keeps the identity
	unreached := false    // --kubeconfig did not reach the member, and --force goes on without it
	// Reach the member first, so a bad kubeconfig changes nothing.
	if o.member.kubeconfig != "" {
		cfg, kube, err := o.member.client()
		if err != nil {
			return err
		}
		id, err := clusterID(ctx, kube)
		if err != nil {
			if !o.force {
				return fmt.Errorf("member cluster: %w: nothing changed; add --force to unjoin %s without removing the identity in the member, "+
					"or run unjoin without --kubeconfig", err, name)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: member cluster: %v: the federation's identity (ServiceAccount %s/%s, ClusterRole and "+
				"ClusterRoleBinding %s) stays in the member\n", err, names.SystemNamespace, memberServiceAccount, memberClusterRole)
			unreached = true
		} else {
			// Another member's kubeconfig would strip the identity of a cluster still joined under its own name.
			if registered {
				if other := otherCluster(c, id, cfg.Host); other != "" {
					return fmt.Errorf("cluster %s is registered for another cluster than --kubeconfig reaches (%s): nothing changed", name, other)
				}
			}
			// A cluster joined under two names (before join refused that) shares one identity: the other still uses it.
			if sharedWith, err = registeredAs(ctx, host, id, cfg.Host, name); err != nil {
				return err
			}
			switch {
			case sharedWith != "" && !registered:
				return fmt.Errorf("--kubeconfig reaches cluster %s, still joined; %s is not registered: nothing changed", sharedWith, name)
			case sharedWith == "":
				identity = &memberIdentity{kube: kube}
			}
		}
	}
	removed := registered
	if registered {
		if err := o.unregister(ctx, cmd.ErrOrStderr(), host, c, secret); err != nil {
			return err
		}
	} else if secret != nil {
		if removed, err = deleteSecret(ctx, host, secret); err != nil {
			return err
		}
	}
	if identity != nil {
		gone, err := identity.remove(ctx)
		if err != nil {
			return err
		}
		removed = removed || gone
	}
	if !removed { // as kubectl delete of a name that is not there
		return fmt.Errorf("cluster %q not found", name)
	}
	if unreached {
		fmt.Fprintf(cmd.OutOrStdout(), "cluster %s unjoined; the identity in the member stays, --kubeconfig did not reach it\n", name)
		return nil
	}
	if sharedWith != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "cluster %s unjoined; the identity in the member stays, cluster %s still uses it\n", name, sharedWith)
		return nil
	}
	fmt.Fprintf(cmd.OutOrStdout(), "cluster %s unjoined\n", name)
	return nil
}

// credentials is the Secret in the host with the credentials of cluster name that unjoin removes, or nil: the one
// registered Cluster c's secretRef names, whoever made it (an older join did not label it); with no Cluster, the
// Secret NAME that join made (see joinsSecret), left by a join that failed or was interrupted before it made the
// Cluster, or by an older unjoin that let the Cluster go before it deleted the Secret. Any other Secret of that name
// is not the cluster's (the chart's certificates live in the same namespace), and one that another Cluster names
// stays for it (a Cluster copied from another shares its Secret).
func credentials(ctx context.Context, host client.Client, name string, c *clusterv1alpha1.Cluster, registered bool) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	switch {
	case registered && c.Spec.SecretRef == nil:
		return nil, nil
	case registered:
		secret.Namespace, secret.Name = c.Spec.SecretRef.Namespace, c.Spec.SecretRef.Name
	default:
		switch err := host.Get(ctx, client.ObjectKey{Namespace: names.SystemNamespace, Name: name}, secret); {
		case apierrors.IsNotFound(err):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("host: secret %s/%s: %w", names.SystemNamespace, name, err)
		case !joinsSecret(secret):
			return nil, nil
		}
	}
	var clusters clusterv1alpha1.ClusterList
	if err := host.List(ctx, &clusters); err != nil {
		return nil, fmt.Errorf("host: list clusters: %w", err)
	}
	for _, other := range clusters.Items {
		if ref := other.Spec.SecretRef; other.Name != name && ref != nil && ref.Namespace == secret.Namespace && ref.Name == secret.Name {
			return nil, nil
		}
	}
	return secret, nil
}

// joinsSecret reports whether secret is one join wrote: with join's label, or, as a join older than the label
// wrote it, an Opaque Secret with join's keys and no others.
func joinsSecret(secret *corev1.Secret) bool {
	if secret.Labels[managedByLabel] == managedBy {
		return true
	}
	_, token := secret.Data[clusterv1alpha1.SecretTokenKey]
	_, ca := secret.Data[clusterv1alpha1.SecretCADataKey]
	return secret.Type == corev1.SecretTypeOpaque && token && ca && len(secret.Data) == 2
}

// deleteSecret deletes the credentials secret, and reports whether it was there. A Secret read before (it has a
// UID) is deleted only if it is still that one, not another made since under its name.
func deleteSecret(ctx context.Context, host client.Client, secret *corev1.Secret) (bool, error) {
	var opts []client.DeleteOption
	if secret.UID != "" {
		opts = append(opts, client.Preconditions{UID: &secret.UID})
	}
	switch err := host.Delete(ctx, secret, opts...); {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("host: delete secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
}

// registeredAs is the name of a Cluster other than except registered for the cluster of id at endpoint, or "" if
// none is.
func registeredAs(ctx context.Context, host client.Client, id, endpoint, except string) (string, error) {
	var clusters clusterv1alpha1.ClusterList
	if err := host.List(ctx, &clusters); err != nil {
		return "", fmt.Errorf("host: list clusters: %w", err)
	}
	for i := range clusters.Items {
		if clusters.Items[i].Name != except && otherCluster(&clusters.Items[i], id, endpoint) == "" {
			return clusters.Items[i].Name, nil
		}
	}
	return "", nil
}

// unregister takes registered Cluster c out of the host: it drains it, then deletes its credentials secret (nil:
// none to delete), then lets it go. An unjoin that stops midway (Works that stay, an error, Ctrl-C) leaves the
// Cluster, held, for unjoin to be run again on, and never the Secret without its Cluster, which nothing would name.
func (o *unjoinOptions) unregister(ctx context.Context, out io.Writer, host client.Client, c *clusterv1alpha1.Cluster, secret *corev1.Secret) error {
	if err := o.drain(ctx, out, host, c); err != nil {
		return err
	}
	if secret != nil {
		switch _, err := deleteSecret(ctx, host, secret); {
		case err != nil && (o.force || apierrors.IsForbidden(err)):
			// Not allowed to delete it (or forced): holding the Cluster would not help, and would keep its name.
			fmt.Fprintf(out, "warning: leaving secret %s/%s with the credentials of cluster %s: %v\n", secret.Namespace, secret.Name, c.Name, err)
		case err != nil:
			return err
		}
	}
	return o.release(ctx, host, c.Name)
}

// drain deletes Cluster c, held by UnjoinFinalizer until the cluster's Works are gone, and their objects from the
// member with them: it deletes them (the binding stage makes none for a cluster being deleted, and deletes its
// Works too), and the execution stage cleans up with the credentials that go with the Cluster. With --force it
// goes on even if Works remain after --timeout. The Cluster stays held: unregister lets it go.
func (o *unjoinOptions) drain(ctx context.Context, out io.Writer, host client.Client, c *clusterv1alpha1.Cluster) error {
	if c.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(c, names.UnjoinFinalizer) {
			patch := client.MergeFromWithOptions(c.DeepCopy(), client.MergeFromWithOptimisticLock{})
			controllerutil.AddFinalizer(c, names.UnjoinFinalizer)
			if err := host.Patch(ctx, c, patch); err != nil {
				return fmt.Errorf("host: hold cluster %s for its cleanup: %w", c.Name, err)
			}
		}
		if err := client.IgnoreNotFound(host.Delete(ctx, c)); err != nil {
			return fmt.Errorf("host: delete cluster %s: %w", c.Name, err)
		}
	}
	remaining, err := o.waitWorksGone(ctx, out, host, c.Name)
	if err != nil {
		return err
	}
	if len(remaining) > 0 {
		if !o.force {
			return fmt.Errorf("%s of cluster %s still there after %s: run unjoin again to wait longer, or with --force to leave their objects in the member",
				describeWorks(remaining), c.Name, o.timeout)
		}
		fmt.Fprintf(out, "warning: leaving the objects of %s in cluster %s\n", describeWorks(remaining), c.Name)
	}
	return nil
}

// waitWorksGone deletes the Works of cluster and polls the host until none is left, or --timeout passes; it returns
// the Works left. Each poll deletes those not being deleted yet: a Work whose binding is gone, one kept for a
// graceful eviction, or one a binding made just before it saw the Cluster leave.
func (o *unjoinOptions) waitWorksGone(ctx context.Context, out io.Writer, host client.Client, cluster string) ([]workv1alpha1.Work, error) {
	deadline := time.Now().Add(o.timeout)
	told := -1
	for {
		var works workv1alpha1.WorkList
		if err := host.List(ctx, &works, client.MatchingLabels{names.ClusterLabel: names.LabelValue(cluster)}); err != nil {
			return nil, fmt.Errorf("host: list the Works of cluster %s: %w", cluster, err)
		}
		var left []workv1alpha1.Work
		for _, w := range works.Items {
			if w.Spec.ClusterName != cluster {
				continue
			}
			left = append(left, w)
			if w.DeletionTimestamp.IsZero() {
				if err := client.IgnoreNotFound(host.Delete(ctx, &w)); err != nil {
					return nil, fmt.Errorf("host: delete Work %s/%s: %w", w.Namespace, w.Name, err)
				}
			}
		}
		if len(left) == 0 || !time.Now().Before(deadline) {
			return left, nil
		}
		if len(left) != told {
			fmt.Fprintf(out, "waiting for %s of cluster %s to be removed\n", describeWorks(left), cluster)
			told = len(left)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(o.poll):
		}
	}
}

// release takes UnjoinFinalizer off the Cluster, which then goes.
func (o *unjoinOptions) release(ctx context.Context, host client.Client, cluster string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var c clusterv1alpha1.Cluster
		if err := host.Get(ctx, client.ObjectKey{Name: cluster}, &c); err != nil {
			return err
		}
		if !controllerutil.ContainsFinalizer(&c, names.UnjoinFinalizer) {
			return nil
		}
		patch := client.MergeFromWithOptions(c.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.RemoveFinalizer(&c, names.UnjoinFinalizer)
		return host.Patch(ctx, &c, patch)
	})
	if err := client.IgnoreNotFound(err); err != nil {
		return fmt.Errorf("host: let cluster %s go: %w", cluster, err)
	}
	return nil
}

// describeWorks is "N Works (ns/a, ns/b, ...)", naming the first three.
func describeWorks(works []workv1alpha1.Work) string {
	var keys []string
	for i, w := range works {
		if i == 3 {
			keys = append(keys, "...")
			break
		}
		keys = append(keys, w.Namespace+"/"+w.Name)
	}
	noun := "Works"
	if len(works) == 1 {
		noun = "Work"
	}
	return fmt.Sprintf("%d %s (%s)", len(works), noun, strings.Join(keys, ", "))
}
