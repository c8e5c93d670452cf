package cluster

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// Requests is what an API server has answered so far, by "VERB resource[/subresource]" with " (code)" when the
// code is not 2xx, from its apiserver_request_total scraped from /metrics (cs needs a client allowed to read it,
// such as Clientset's admin). LISTs and WATCHes are left out: they are polling and informers, not work per object.
// A request is counted just after its answer is sent.
func Requests(ctx context.Context, cs kubernetes.Interface) (map[string]float64, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("API server metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("API server metrics: %w", err)
	}
	out := map[string]float64{}
	fam := families["apiserver_request_total"]
	if fam == nil {
		return out, nil
	}
	for _, m := range fam.GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if l["verb"] == "LIST" || l["verb"] == "WATCH" || l["resource"] == "" {
			continue
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		if code := l["code"]; code != "" && code[0] != '2' {
			key += " (" + code + ")"
		}
		out[key] += m.GetCounter().GetValue()
	}
	return out, nil
}
