package cluster

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	clusterv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/cluster/v1alpha1"
	"github.com/fedmesh/fedmesh/pkg/internal/shorten"
)

// maxMessage bounds the probe's message in the condition: /readyz bodies list every check.
const maxMessage = 512

// probe GETs the member's /readyz within timeout.
func probe(ctx context.Context, kc kubernetes.Interface, timeout time.Duration) ProbeResult {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var code int
	body, err := kc.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code).Raw()
	switch {
	case code == 0 && err != nil:
		// No HTTP answer: refused, timed out, TLS failed.
		return ProbeResult{Outcome: Unreachable, Message: trim(err.Error())}
	case code != http.StatusOK:
		msg := fmt.Sprintf("/readyz answered %d", code)
		if err != nil {
			msg += ": " + err.Error()
		} else if len(body) > 0 {
			msg += ": " + string(body)
		}
		return ProbeResult{Outcome: Unhealthy, Message: trim(msg)}
	}
	return ProbeResult{Outcome: Healthy}
}

func trim(s string) string {
	return shorten.To(strings.TrimSpace(s), maxMessage)
}

// observed is what the controller read from a healthy member for the Cluster's status.
type observed struct {
	version string
	apis    []clusterv1alpha1.APIEnablement
	// failedAPIs are the group versions discovery failed to list, sorted: apis lacks them.
	failedAPIs []schema.GroupVersion
	// discoveryErr is discovery's error for failedAPIs, to log.
	discoveryErr error
	nodes        *clusterv1alpha1.NodeSummary
	resources    *clusterv1alpha1.ResourceSummary
}

// observe reads the member's version and served APIs, and sums its nodes and pods from usage, counting the nodes
// by the grades of models; the summaries are nil while usage is still listing them. kc must bound each request in
// time itself (rest.Config.Timeout): discovery takes no context.
func observe(kc kubernetes.Interface, usage *usageWatch, models []clusterv1alpha1.ResourceModel) (*observed, error) {
	v, err := kc.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("version: %w", err)
	}
	_, lists, err := kc.Discovery().ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		// A failed group (e.g. an aggregated API that is down) still leaves the others worth reporting.
		return nil, fmt.Errorf("discovery: %w", err)
	}
	obs := &observed{version: v.GitVersion, apis: apiEnablements(lists)}
	if failed, ok := discovery.GroupDiscoveryFailedErrorGroups(err); ok {
		obs.failedAPIs, obs.discoveryErr = failedGroupVersions(failed), err
	}
	obs.nodes, obs.resources, _ = usage.summaries(models)
	return obs, nil
}
