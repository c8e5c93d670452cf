package binding

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// What the host allocated for a template's kind does not reach the members.
func TestStripHostAllocated(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{{
		name: "a Service's cluster IPs and health-check port; its node port stays",
		in: `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {clusterIP: 10.0.0.7, clusterIPs: [10.0.0.7],
			healthCheckNodePort: 31000, ports: [{port: 80, nodePort: 30080}]}}`,
		want: `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {ports: [{port: 80, nodePort: 30080}]}}`,
	}, {
		name: "a headless Service keeps its None",
		in:   `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {clusterIP: None, clusterIPs: [None]}}`,
		want: `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {clusterIP: None, clusterIPs: [None]}}`,
	}, {
		name: "a Job's generated selector and controller labels; the template's own labels stay",
		in: `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {selector: {matchLabels: {batch.kubernetes.io/controller-uid: u}},
			template: {metadata: {labels: {app: j, controller-uid: u, batch.kubernetes.io/controller-uid: u, job-name: j,
			batch.kubernetes.io/job-name: j}}}}}`,
		want: `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {template: {metadata: {labels: {app: j}}}}}`,
	}, {
		name: "a Job with a manual selector keeps it",
		in:   `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {manualSelector: true, selector: {matchLabels: {app: j}}}}`,
		want: `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {manualSelector: true, selector: {matchLabels: {app: j}}}}`,
	}, {
		name: "a ServiceAccount's token Secrets",
		in:   `{apiVersion: v1, kind: ServiceAccount, metadata: {name: sa}, secrets: [{name: sa-token-x}]}`,
		want: `{apiVersion: v1, kind: ServiceAccount, metadata: {name: sa}}`,
	}, {
		name: "a Deployment's revision annotations of the host's deployment controller; its own stay",
		in: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, annotations: {team: a, deployment.kubernetes.io/revision: "3",
			deployment.kubernetes.io/revision-history: "1,2"}}, spec: {replicas: 1}}`,
		want: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, annotations: {team: a}}, spec: {replicas: 1}}`,
	}, {
		name: "a Deployment with nothing but its revision annotation has none left",
		in:   `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, annotations: {deployment.kubernetes.io/revision: "1"}}, spec: {replicas: 1}}`,
		want: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: 1}}`,
	}, {
		name: "a DaemonSet's template generation, which each API server counts for itself",
		in: `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: ds, annotations: {team: a, deprecated.daemonset.template.generation: "4"}},
			spec: {template: {spec: {containers: [{name: a, image: a}]}}}}`,
		want: `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: ds, annotations: {team: a}}, spec: {template: {spec: {containers: [{name: a, image: a}]}}}}`,
	}, {
		name: "a bound claim's volume",
		in:   `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, spec: {volumeName: pv-1, resources: {}}, status: {phase: Bound}}`,
		want: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, spec: {resources: {}}}`,
	}, {
		name: "a claim's volume the host's volume controller bound it to",
		in: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c, managedFields: [
			{manager: kubectl-create, operation: Update, fieldsType: FieldsV1, fieldsV1: {f:spec: {f:resources: {}}}},
			{manager: kube-controller-manager, operation: Update, fieldsType: FieldsV1, fieldsV1: {f:spec: {f:volumeName: {}}}}]},
			spec: {volumeName: pv-1, resources: {}}}`,
		want: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, spec: {resources: {}}}`,
	}, {
		name: "a claim its author pre-bound to a volume keeps it, bound in the host or not",
		in: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c, annotations: {pv.kubernetes.io/bind-completed: "yes"},
			managedFields: [{manager: kubectl-client-side-apply, operation: Update, fieldsType: FieldsV1,
			fieldsV1: {f:spec: {f:accessModes: {}, f:resources: {}, f:storageClassName: {}, f:volumeName: {}}}}]},
			spec: {storageClassName: "", volumeName: nfs-share, resources: {}}, status: {phase: Bound}}`,
		want: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, spec: {storageClassName: "", volumeName: nfs-share, resources: {}}}`,
	}, {
		name: "a claim whose volume a volume controller chose loses it, whoever wrote the manifest",
		in: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c, annotations: {pv.kubernetes.io/bound-by-controller: "yes"},
			managedFields: [{manager: kubectl-client-side-apply, operation: Update, fieldsType: FieldsV1,
			fieldsV1: {f:metadata: {f:annotations: {}}, f:spec: {f:resources: {}, f:volumeName: {}}}}]},
			spec: {volumeName: pvc-0a1b2c3d, resources: {}}}`,
		want: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, spec: {resources: {}}}`,
	}, {
		name: "a claim exported from where it was provisioned loses the provisioned volume, though its author owns the field",
		in: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c, annotations: {pv.kubernetes.io/bind-completed: "yes"},
			managedFields: [{manager: argocd-controller, operation: Apply, fieldsType: FieldsV1,
			fieldsV1: {f:spec: {f:resources: {}, f:volumeName: {}}}}]},
			spec: {volumeName: pvc-3b9d5a10-1c2e-4f6a-9b7d-5e8f0a1b2c3d, resources: {}}, status: {phase: Bound}}`,
		want: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, spec: {resources: {}}}`,
	}, {
		name: "a claim without managed fields that names a volume but is not bound keeps it: its author's",
		in:   `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, spec: {volumeName: nfs-share, resources: {}}}`,
		want: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, spec: {volumeName: nfs-share, resources: {}}}`,
	}, {
		name: "a claim's binding annotations of the host's volume controller and scheduler; its own stay",
		in: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c, annotations: {example.com/owner: team-a,
			pv.kubernetes.io/bind-completed: "yes", pv.kubernetes.io/bound-by-controller: "yes",
			volume.beta.kubernetes.io/storage-provisioner: example.com/p, volume.kubernetes.io/storage-provisioner: example.com/p,
			volume.kubernetes.io/selected-node: node-1}}, spec: {volumeName: pv-1, resources: {}}}`,
		want: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c, annotations: {example.com/owner: team-a}},
			spec: {resources: {}}}`,
	}, {
		name: "a claim with nothing but binding annotations has none left",
		in:   `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c, annotations: {pv.kubernetes.io/bind-completed: "yes"}}, spec: {resources: {}}}`,
		want: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, spec: {resources: {}}}`,
	}, {
		name: "a claim's class set by the host's admission (no manager owns it), and its bound volume",
		in: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c, managedFields: [{manager: kubectl-create,
			operation: Update, fieldsType: FieldsV1, fieldsV1: {f:spec: {f:accessModes: {}, f:resources: {}}}}]},
			spec: {storageClassName: host-fast, volumeName: pv-1, resources: {}}, status: {phase: Bound}}`,
		want: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, spec: {resources: {}}}`,
	}, {
		name: "a claim's class the host's volume controller set retroactively",
		in: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c, managedFields: [
			{manager: kubectl-create, operation: Update, fieldsType: FieldsV1, fieldsV1: {f:spec: {f:resources: {}}}},
			{manager: kube-controller-manager, operation: Update, fieldsType: FieldsV1, fieldsV1: {f:spec: {f:storageClassName: {}}}}]},
			spec: {storageClassName: host-fast, resources: {}}}`,
		want: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, spec: {resources: {}}}`,
	}, {
		name: "a claim's class its author chose stays",
		in: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c, managedFields: [{manager: kubectl,
			operation: Apply, fieldsType: FieldsV1, fieldsV1: {f:spec: {f:storageClassName: {}, f:resources: {}}}}]},
			spec: {storageClassName: fast, resources: {}}}`,
		want: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, spec: {storageClassName: fast, resources: {}}}`,
	}, {
		name: "a claim without managed fields tells nothing and keeps its class",
		in:   `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, spec: {storageClassName: fast, resources: {}}}`,
		want: `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, spec: {storageClassName: fast, resources: {}}}`,
	}, {
		name: "a service-account token Secret's host token, CA, namespace and service account UID",
		in: `{apiVersion: v1, kind: Secret, metadata: {name: t, annotations: {kubernetes.io/service-account.name: bot,
			kubernetes.io/service-account.uid: host-uid}}, type: kubernetes.io/service-account-token,
			data: {token: aG9zdA==, ca.crt: Y2E=, namespace: ZGVtbw==, extra: eA==}}`,
		want: `{apiVersion: v1, kind: Secret, metadata: {name: t, annotations: {kubernetes.io/service-account.name: bot}},
			type: kubernetes.io/service-account-token, data: {extra: eA==}}`,
	}, {
		name: "an Opaque Secret keeps its token key",
		in:   `{apiVersion: v1, kind: Secret, metadata: {name: s}, type: Opaque, data: {token: eA==}}`,
		want: `{apiVersion: v1, kind: Secret, metadata: {name: s}, type: Opaque, data: {token: eA==}}`,
	}, {
		name: "another group's Service is left alone",
		in:   `{apiVersion: example.com/v1, kind: Service, metadata: {name: s}, spec: {clusterIP: 10.0.0.7}}`,
		want: `{apiVersion: example.com/v1, kind: Service, metadata: {name: s}, spec: {clusterIP: 10.0.0.7}}`,
	}} {
		got := stripServerFields(unstr(t, tc.in))
		if diff := cmp.Diff(unstr(t, tc.want).Object, got.Object); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
