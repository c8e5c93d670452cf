package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FakeNodeAnnotation marks the nodes kwok manages; tests may create more nodes with it.
const FakeNodeAnnotation = "kwok.x-k8s.io/node"

// startControllerManager runs kube-controller-manager and waits until its service-account controllers have
// made the default ServiceAccount, without which no Pod can be created.
func (c *Cluster) startControllerManager(ctx context.Context) error {
	port, err := FreePort()
	if err != nil {
		return err
	}
	args := []string{"--kubeconfig=" + c.kubeconfig,
		"--authentication-kubeconfig=" + c.kubeconfig, "--authorization-kubeconfig=" + c.kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(c.dir, "kcm-certs"),
		"--leader-elect=false",
		"--service-account-private-key-file=" + c.creds.saKey,
		"--root-ca-file=" + c.creds.servingCert,
		"--controllers=*",
		"--concurrent-deployment-syncs=10", "--concurrent-replicaset-syncs=10"}
	p, err := c.start("kube-controller-manager", "kube-controller-manager", append(args, c.opts.ControllerManagerFlags...)...)
	if err != nil {
		return err
	}
	cs := c.Clientset()
	return waitFor(ctx, p, func(ctx context.Context) error {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// startFakeNodes runs kube-scheduler and kwok, registers FakeNodes nodes and waits until they are Ready.
func (c *Cluster) startFakeNodes(ctx context.Context) error {
	schedPort, err := FreePort()
	if err != nil {
		return err
	}
	schedArgs := []string{"--kubeconfig=" + c.kubeconfig,
		"--authentication-kubeconfig=" + c.kubeconfig, "--authorization-kubeconfig=" + c.kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(schedPort),
		"--leader-elect=false"}
	sched, err := c.start("kube-scheduler", "kube-scheduler", append(schedArgs, c.opts.SchedulerFlags...)...)
	if err != nil {
		return err
	}
	kwokPort, err := FreePort()
	if err != nil {
		return err
	}
	kwok, err := c.start("kwok", "kwok",
		"--kubeconfig="+c.kubeconfig,
		"-c", filepath.Join(c.opts.BinDir, "stages.yaml"),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+FakeNodeAnnotation+"=fake",
		"--cidr=10.0.0.1/24", "--node-ip=10.0.0.1",
		// The heartbeat stage refreshes node status only every few minutes and leaves liveness to the node Lease,
		// which kwok renews only with a lease duration: without one, kube-controller-manager marks the nodes
		// NotReady after its grace period and every pod on them not ready, for good.
		"--node-lease-duration-seconds=40",
		"--server-address=127.0.0.1:"+strconv.Itoa(kwokPort))
	if err != nil {
		return err
	}
	cs := c.Clientset()
	for i := range c.opts.FakeNodes {
		if _, err := cs.CoreV1().Nodes().Create(ctx, fakeNode(fmt.Sprintf("fake-%d", i)), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create fake node: %w", err)
		}
	}
	for _, p := range []*Process{sched, kwok} {
		if done, err := p.Exited(); done {
			return fmt.Errorf("%s exited: %v", p.name, err)
		}
	}
	return waitFor(ctx, kwok, func(ctx context.Context) error {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready < c.opts.FakeNodes {
			return fmt.Errorf("%d of %d fake nodes ready", ready, c.opts.FakeNodes)
		}
		// Their liveness is their Leases: without them the nodes go NotReady after the grace period.
		leases, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(leases.Items) < c.opts.FakeNodes {
			return fmt.Errorf("%d of %d fake nodes have a Lease", len(leases.Items), c.opts.FakeNodes)
		}
		return nil
	})
}

// fakeNode is a node that kwok manages: roomy enough for a few hundred test pods.
func fakeNode(name string) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("250"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{FakeNodeAnnotation: "fake"},
			Labels:      map[string]string{"kubernetes.io/hostname": name, "type": "kwok"},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}
