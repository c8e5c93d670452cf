package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/fedmesh/fedmesh/pkg/proxy/filter"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// probeBackoff is how long a probe that told nothing (an empty collection of a custom resource, say) holds off the
// next one of its resource: each watch would otherwise cost two more lists for as long as the collection is empty.
const probeBackoff = time.Minute

// probeOnce probes key (see probe) and notes a probe that failed or told nothing, so that the next waits for
// probeBackoff. The proxy checks the watch that follows either way (watchKeep).
func (p *Proxy) probeOnce(r *http.Request, req *Request, u *upstream, owned shard.Set, key filter.ProbeKey) {
	err := p.probe(r, req, u, owned, key)
	if err != nil {
		p.log.V(1).Info("shardSelector probe failed; filtering in the proxy", "cluster", clusterLabel(req.Cluster), "resource", resourceLabel(req), "error", err.Error())
	}
	if p.prober.Verdict(key) == filter.Unknown {
		p.prober.Inconclusive(key, time.Now().Add(probeBackoff))
	}
}

// probe learns whether the upstream filters key's resource by shardSelector, from two lists of one object each,
// with the caller's credentials. shardInfo alone cannot tell it: custom resources' lists never carry it (nor do
// Tables and PartialObjectMetadataLists), and a list the server filtered to the shard's own namespaces looks like
// one it did not filter. So the first list asks without a shardSelector, and the second asks again at exactly the
// first's resourceVersion for every namespace but the first object's (filter.ExclusionPlan): a server that ignores
// the shardSelector answers the same request, with that object, and one that filters cannot. With no object to go
// by, the second asks with the shard's own shardSelector, which only a list that carries shardInfo answers either
// way, so it is not sent for one that cannot; the verdict may stay unknown, and the proxy filters until a later
// probe tells.
func (p *Proxy) probe(r *http.Request, req *Request, u *upstream, owned shard.Set, key filter.ProbeKey) error {
	first, err := probeList(r, req, u, url.Values{"limit": {"1"}})
	if err != nil {
		return err
	}
	plan, ok, err := filter.ExclusionPlan(first)
	if err != nil {
		return err
	}
	if !ok {
		if !first.CarriesShardInfo() {
			return nil
		}
		if plan, err = filter.Rewrite(filter.ModeServer, owned, url.Values{}); err != nil {
			return err
		}
		plan.Query.Set("limit", "1")
	}
	answer, err := probeList(r, req, u, plan.Query)
	if err != nil {
		return err
	}
	if ok {
		p.prober.CheckProbe(key, plan, answer)
	} else {
		p.prober.CheckSummary(key, plan, answer)
	}
	return nil
}

// probeList lists req's resource upstream with query, as JSON and with the caller's credentials, and reads the
// answer.
func probeList(r *http.Request, req *Request, u *upstream, query url.Values) (filter.ListSummary, error) {
	target := u.target.JoinPath(req.listPath()) // a watch's own path may be a watch (/api/v1/watch/pods)
	target.RawQuery = query.Encode()
	probe, err := http.NewRequestWithContext(r.Context(), http.MethodGet, target.String(), nil)
	if err != nil {
		return filter.ListSummary{}, err
	}
	probe.Header.Set("Accept", "application/json")
	if auth := r.Header.Get("Authorization"); auth != "" {
		probe.Header.Set("Authorization", auth)
	}
	resp, err := u.transport.RoundTrip(probe)
	if err != nil {
		return filter.ListSummary{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return filter.ListSummary{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return filter.ListSummary{}, fmt.Errorf("probe list: %s", resp.Status)
	}
	return filter.ReadListSummary(body, resp.Header.Get("Content-Type"))
}
