package native

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// retainService keeps what the member allocated: cluster IPs, the health-check node port, and each port's node
// port, unless the template asks for specific ones.
func retainService(desired, observed *unstructured.Unstructured) error {
	for _, f := range []string{"clusterIP", "clusterIPs", "healthCheckNodePort"} {
		if err := copyIfUnset(desired, observed, "spec", f); err != nil {
			return err
		}
	}
	theirs, _, err := unstructured.NestedSlice(observed.Object, "spec", "ports")
	if err != nil || len(theirs) == 0 {
		return err
	}
	ours, ok, err := unstructured.NestedSlice(desired.Object, "spec", "ports")
	if err != nil || !ok {
		return err
	}
	nodePorts := map[string]any{}
	for _, p := range theirs {
		if m, ok := p.(map[string]any); ok && m["nodePort"] != nil {
			nodePorts[portKey(m)] = m["nodePort"]
		}
	}
	for i, p := range ours {
		m, ok := p.(map[string]any)
		if !ok || !empty(m["nodePort"]) {
			continue
		}
		if np, ok := nodePorts[portKey(m)]; ok {
			m["nodePort"] = np
			ours[i] = m
		}
	}
	return unstructured.SetNestedSlice(desired.Object, ours, "spec", "ports")
}

// portKey identifies a Service port as the API server does: by port number and protocol (TCP by default).
func portKey(m map[string]any) string {
	proto, _ := m["protocol"].(string)
	if proto == "" {
		proto = "TCP"
	}
	port, _, _ := nestedInt(m, "port")
	return fmt.Sprintf("%d/%s", port, proto)
}

// retainServiceAccount keeps the token Secrets the member's controllers listed.
func retainServiceAccount(desired, observed *unstructured.Unstructured) error {
	_, err := mergeByName(desired, observed, "name", "secrets")
	return err
}

// JobControllerLabels are the labels the API server's Job strategy puts on a Job's selector and pod template;
// they carry the Job's UID, so each cluster's are its own.
var JobControllerLabels = []string{
	"controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name",
}

// retainJob keeps the selector the member's Job controller generated and its labels on the pod template, which
// are immutable once set.
func retainJob(desired, observed *unstructured.Unstructured) error {
	if manual, _, _ := unstructured.NestedBool(desired.Object, "spec", "manualSelector"); manual {
		return nil
	}
	if err := copyField(desired, observed, "spec", "selector"); err != nil {
		return err
	}
	theirs, _, err := unstructured.NestedStringMap(observed.Object, "spec", "template", "metadata", "labels")
	if err != nil || len(theirs) == 0 {
		return err
	}
	ours, _, err := unstructured.NestedStringMap(desired.Object, "spec", "template", "metadata", "labels")
	if err != nil {
		return err
	}
	if ours == nil {
		ours = map[string]string{}
	}
	for _, k := range JobControllerLabels {
		if v, ok := theirs[k]; ok {
			ours[k] = v
		}
	}
	return unstructured.SetNestedStringMap(desired.Object, ours, "spec", "template", "metadata", "labels")
}

// ServiceAccountTokenKeys are the data keys a token controller fills into a legacy service-account token Secret:
// each cluster's are its own, and the host's are a credential of the host.
var ServiceAccountTokenKeys = []string{corev1.ServiceAccountTokenKey, corev1.ServiceAccountRootCAKey, corev1.ServiceAccountNamespaceKey}

// retainSecret makes what a token controller fills into a service-account token Secret the member's alone: the
// token keys and the service account's UID annotation are taken from observed, whatever desired says, so the
// host's are never sent (and a Secret naming another UID is not deleted by the member's token controller).
func retainSecret(desired, observed *unstructured.Unstructured) error {
	if t, _, _ := unstructured.NestedString(desired.Object, "type"); t != string(corev1.SecretTypeServiceAccountToken) {
		return nil
	}
	for _, k := range ServiceAccountTokenKeys {
		unstructured.RemoveNestedField(desired.Object, "data", k)
		if err := copyField(desired, observed, "data", k); err != nil {
			return err
		}
	}
	retainAnnotations(desired, observed, corev1.ServiceAccountUIDKey)
	return nil
}

// ClaimBindingAnnotations are the annotations a cluster's volume controller and scheduler write on a claim as they
// bind and provision it: each cluster's are its own. A new claim that says it was bound but names no volume is
// taken by the volume controller for one that lost its volume: Lost, and never provisioned.
var ClaimBindingAnnotations = []string{
	"pv.kubernetes.io/bind-completed",
	"pv.kubernetes.io/bound-by-controller",
	"volume.beta.kubernetes.io/storage-provisioner",
	"volume.kubernetes.io/storage-provisioner",
	"volume.kubernetes.io/selected-node",
}

// retainClaim keeps what the member's volume controller set: the bound volume and the storage class (immutable
// once set), and the binding annotations, which are the member's values whatever desired says.
func retainClaim(desired, observed *unstructured.Unstructured) error {
	for _, f := range []string{"volumeName", "storageClassName"} {
		if err := copyField(desired, observed, "spec", f); err != nil {
			return err
		}
	}
	retainAnnotations(desired, observed, ClaimBindingAnnotations...)
	return nil
}

// retainAnnotations gives desired observed's values of the annotations keys, and drops desired's own.
func retainAnnotations(desired, observed *unstructured.Unstructured, keys ...string) {
	annotations := desired.GetAnnotations()
	theirs := observed.GetAnnotations()
	for _, k := range keys {
		delete(annotations, k)
		if v, ok := theirs[k]; ok {
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotations[k] = v
		}
	}
	desired.SetAnnotations(annotations)
}
