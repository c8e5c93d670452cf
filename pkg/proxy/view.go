package proxy

import (
	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/shard"
)

// showing is what a list or watch shows of its resource under the shard's ownership.
type showing int

const (
	// showsNothing: the shard owns nothing the request could see; the API server is asked for nothing.
	showsNothing showing = iota
	// showsAll: the request passes unchanged (one owned namespace, a resource not sharded, cluster-scoped
	// objects on the shard that sees them).
	showsAll
	// showsOwned: a request across namespaces, narrowed to the shard's ranges.
	showsOwned
)

// view is what a list or watch shows under one ownership. A watch stays open across an ownership change only if
// its view under the new ownership is the same; otherwise it ends, and its client lists again.
type view struct {
	shows showing
	owned shard.Set // showsOwned: the ranges
	mode  string    // showsOwned: how they are filtered
}

// viewOf is the view of req under own (nil: no ownership, or a lapsed one). namespaced says whether req's
// resource is namespaced; a namespace's own requests are not.
func viewOf(own *config.Ownership, req *Request, namespaced bool) view {
	switch {
	case own == nil:
		return view{shows: showsNothing}
	case !namespaced:
		if own.SeesClusterScoped() {
			return view{shows: showsAll}
		}
		return view{shows: showsNothing}
	case !own.Sharded(req.groupResource()):
		return view{shows: showsAll} // in one namespace as across them; its writes stay fenced
	case req.Namespace != "":
		// One namespace: all of it or nothing.
		if own.Owned().ContainsNamespace(req.Namespace) {
			return view{shows: showsAll}
		}
		return view{shows: showsNothing}
	}
	return view{shows: showsOwned, owned: own.Owned(), mode: string(own.FilterMode)}
}

func (v view) same(o view) bool {
	return v.shows == o.shows && v.owned.Equal(o.owned) && v.mode == o.mode
}
