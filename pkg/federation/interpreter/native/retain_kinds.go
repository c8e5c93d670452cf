package native

import (
	"fmt"

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

// retainSecret keeps what the member's token controller filled into a service-account token Secret: the data
// keys the template lacks (token, ca.crt, namespace) and the service account's UID annotation.
func retainSecret(desired, observed *unstructured.Unstructured) error {
	if t, _, _ := unstructured.NestedString(desired.Object, "type"); t != "kubernetes.io/service-account-token" {
		return nil
	}
	theirs, _, err := unstructured.NestedMap(observed.Object, "data")
	if err != nil || len(theirs) == 0 {
		return err
	}
	ours, _, err := unstructured.NestedMap(desired.Object, "data")
	if err != nil {
		return err
	}
	if ours == nil {
		ours = map[string]any{}
	}
	for k, v := range theirs {
		if _, ok := ours[k]; !ok {
			ours[k] = v
		}
	}
	if err := unstructured.SetNestedMap(desired.Object, ours, "data"); err != nil {
		return err
	}
	const uid = "kubernetes.io/service-account.uid"
	if v, ok := observed.GetAnnotations()[uid]; ok {
		a := desired.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		if _, set := a[uid]; !set {
			a[uid] = v
			desired.SetAnnotations(a)
		}
	}
	return nil
}
