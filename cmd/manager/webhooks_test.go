package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
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

func list(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}
