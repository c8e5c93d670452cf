package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/fedmesh/fedmesh/pkg/webhook/inject"
)

func TestProxyResources(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		requests corev1.ResourceList
		limits   corev1.ResourceList
		err      string
	}{
		{name: "none: inject's defaults apply"},
		{name: "requests and limits", args: []string{"--proxy-requests=cpu=2,memory=128Mi", "--proxy-limits=memory=256Mi"},
			requests: list("cpu", "2", "memory", "128Mi"), limits: list("memory", "256Mi")},
		{name: "a request above its limit", args: []string{"--proxy-requests=memory=512Mi", "--proxy-limits=memory=256Mi"},
			err: "--proxy-requests memory=512Mi is more than --proxy-limits memory=256Mi"},
		{name: "not a quantity", args: []string{"--proxy-requests=cpu=lots"}, err: `--proxy-requests cpu="lots"`},
		{name: "zero", args: []string{"--proxy-limits=cpu=0"}, err: `--proxy-limits cpu="0": must be more than 0`},
		{name: "an unknown resource", args: []string{"--proxy-requests=gpu=1"}, err: `"gpu" is not cpu, memory or ephemeral-storage`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o webhookOptions
			fs := pflag.NewFlagSet("manager", pflag.ContinueOnError)
			o.addFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := o.proxyResources()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got.Requests, tc.requests) || !equality.Semantic.DeepEqual(got.Limits, tc.limits) {
				t.Errorf("resources %v, want requests %v and limits %v", got, tc.requests, tc.limits)
			}
		})
	}
}

func TestProxyImagePullPolicy(t *testing.T) {
	for policy, valid := range map[string]bool{"Always": true, "IfNotPresent": true, "Never": true, "always": false, "": false} {
		var o webhookOptions
		fs := pflag.NewFlagSet("manager", pflag.ContinueOnError)
		o.addFlags(fs)
		err := fs.Parse([]string{"--webhook-cert-dir=/certs", "--webhook-service=ns/manager", "--webhook-ca-file=/certs/ca.crt",
			"--proxy-image-pull-policy=" + policy})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.validate(); (err == nil) != valid {
			t.Errorf("--proxy-image-pull-policy=%q: validation error %v", policy, err)
		} else if !valid && !strings.Contains(err.Error(), "is not Always, IfNotPresent or Never") {
			t.Errorf("--proxy-image-pull-policy=%q: error %v does not say what is allowed", policy, err)
		}
	}
}

func list(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// A pod is injected with the xDS CA the file holds when the pod is admitted, which is the CA of the certificate the
// xDS server presents by then; a file that cannot be read, or holds no certificate, leaves the last good CA.
func TestInjectionTrustsTheCurrentCA(t *testing.T) {
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	if _, err := (&fileCA{path: caFile}).current(); err == nil {
		t.Fatal("no CA file: no error, want one (the manager does not start)")
	}
	first, renewed := newTestCA(t).pem, newTestCA(t).pem
	names := map[string]string{string(first): "the first CA", string(renewed): "the renewed CA"}
	h := &currentCAInjection{ca: &fileCA{path: caFile}, handler: inject.Handler{
		Options: inject.Options{Image: "proxy:test", XDSAddress: "fedmesh-manager.fedmesh.svc:18000"},
	}}
	for _, step := range []struct {
		name   string
		change func(t *testing.T)
		want   []byte
	}{
		{name: "at start", want: first,
			change: func(t *testing.T) { writeSecretVolume(t, dir, "..v1", map[string][]byte{"ca.crt": first}) }},
		{name: "the CA changed", want: renewed,
			change: func(t *testing.T) { writeSecretVolume(t, dir, "..v2", map[string][]byte{"ca.crt": renewed}) }},
		{name: "no certificate in the file", want: renewed,
			change: func(t *testing.T) { writeSecretVolume(t, dir, "..v3", map[string][]byte{"ca.crt": []byte("not a CA")}) }},
		{name: "the file gone", want: renewed,
			change: func(t *testing.T) {
				if err := os.RemoveAll(filepath.Join(dir, "..v3")); err != nil {
					t.Fatal(err)
				}
			}},
	} {
		step.change(t)
		if got := injectedCA(t, h.Handle(context.Background(), podCreation(t))); got != string(step.want) {
			t.Errorf("%s: injected %q, want %s", step.name, names[got], names[string(step.want)])
		}
	}
}

// podCreation is the admission of a pod that asks for the proxy.
func podCreation(t *testing.T) admission.Request {
	t.Helper()
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shards", Name: "shard-0", Labels: map[string]string{inject.InjectLabel: "true"},
			Annotations: map[string]string{inject.ShardingConfigAnnotation: "shards"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: "shards",
		Object: runtime.RawExtension{Raw: raw},
	}}
}

// injectedCA is the xDS CA annotation that resp's patch sets.
func injectedCA(t *testing.T, resp admission.Response) string {
	t.Helper()
	if !resp.Allowed {
		t.Fatalf("pod not admitted: %v", resp.Result)
	}
	for _, p := range resp.Patches {
		switch v := p.Value.(type) {
		case string:
			if p.Path == "/metadata/annotations/"+strings.ReplaceAll(inject.XDSCAAnnotation, "/", "~1") {
				return v
			}
		case map[string]any:
			if p.Path == "/metadata/annotations" {
				ca, _ := v[inject.XDSCAAnnotation].(string)
				return ca
			}
		}
	}
	t.Fatalf("no xDS CA in the patch %v", resp.Patches)
	return ""
}
