package proxy

import (
	"errors"
	"fmt"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
	"github.com/fedmesh/fedmesh/pkg/xds"
)

// kindOf maps the manager's xDS types to the proxy's documents.
var kindOf = map[string]config.Kind{
	xds.OwnershipType:     config.KindOwnership,
	xds.TrafficPolicyType: config.KindTraffic,
}

// XDSApply hands the documents the manager sends to store. A document the store refuses is NACKed with the
// store's reason, and the last good one keeps serving; the ACK of an ownership change is sent only after the
// proxy has fenced, drained and ended its watches (Store.Apply returns after its subscribers).
func XDSApply(store *config.Store) xds.ApplyFunc {
	return func(typeURL string, docs map[string]xds.Document) error {
		kind, ok := kindOf[typeURL]
		if !ok {
			return fmt.Errorf("unknown type %s", typeURL)
		}
		switch len(docs) {
		case 0:
			return nil // nothing published for this proxy yet: keep what it has (nothing, or the persisted config)
		case 1:
		default:
			return fmt.Errorf("%d %s documents for one proxy, want one", len(docs), kind)
		}
		for name, doc := range docs {
			err := store.Apply(kind, doc.Version, doc.Data)
			if errors.Is(err, config.ErrEpochConflict) {
				// What the store enforces, persisted by a proxy before it restarted, is what the manager must go past.
				return xds.Conflict(err, map[string]string{name: store.Current().OwnershipVersion})
			}
			return err
		}
		return nil
	}
}
