package filter

import (
	"fmt"
	"net/url"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "sigs.k8s.io/json"

	"github.com/fedmesh/fedmesh/pkg/shard"
)

// A list response says in metadata.shardInfo that the API server filtered it by shardSelector (KEP-5866), but only
// where the list can carry it. kube-apiserver v1.36.3 fills it in on built-in typed lists, and leaves it out of the
// lists it builds otherwise, although it filtered them: custom resources' (UnstructuredList), Tables (as=Table) and
// PartialObjectMetadataList. For those only the entries tell: one outside the selected namespaces shows that the
// server did not filter; none outside shows nothing either way.

// ListSummary is what a list response shows of whether the API server filtered it.
type ListSummary struct {
	Kind            schema.GroupVersionKind
	ResourceVersion string
	// ShardInfo is the list's metadata.shardInfo, nil when it has none.
	ShardInfo *metav1.ShardInfo
	// HasRemainingItemCount says that the list's metadata counts the objects after this page.
	HasRemainingItemCount bool
	// Namespaces are the namespaces of the list's entries, in order: its items', or its Table rows' objects'.
	Namespaces []string
	// NamespacesUnknown says that some entry did not tell its namespace: a Table row without its object
	// (includeObject=None), or an item of a protobuf list whose layout the filter does not know.
	NamespacesUnknown bool
}

// CarriesShardInfo reports whether the list shows by metadata.shardInfo alone whether the server filtered it: it
// has one, or it is a built-in typed list, which the API server would have given one.
func (s ListSummary) CarriesShardInfo() bool {
	return s.ShardInfo != nil || s.Kind.Group != metav1.GroupName && protoScheme.Recognizes(s.Kind)
}

// outside reports whether an entry of s is in a namespace that selector does not select.
func (s ListSummary) outside(selector string) (bool, error) {
	selected, err := parseShardSelector(selector)
	if err != nil {
		return false, err
	}
	for _, ns := range s.Namespaces {
		if !selected.ContainsNamespace(ns) {
			return true, nil
		}
	}
	return false, nil
}

// ReadListSummary reads a list response (JSON, CBOR or protobuf, as contentType says): its kind, metadata and the
// namespaces of its entries.
func ReadListSummary(body []byte, contentType string) (ListSummary, error) {
	f, err := parseFormat(contentType)
	if err != nil {
		return ListSummary{}, err
	}
	var s ListSummary
	switch f {
	case formatJSON:
		// Field names match case-sensitively, as the API server and FilterList read them.
		s, err = decodedListSummary(func(v any) error { return utiljson.UnmarshalCaseSensitivePreserveInts(body, v) })
	case formatCBOR:
		s, err = decodedListSummary(func(v any) error { return cborPartial.Unmarshal(body, v) })
	case formatProtobuf:
		s, err = protoListSummary(body)
	}
	if err != nil {
		return ListSummary{}, fmt.Errorf("read list: %w", err)
	}
	return s, nil
}

func decodedListSummary(decode func(v any) error) (ListSummary, error) {
	var list struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			ResourceVersion    string            `json:"resourceVersion"`
			RemainingItemCount *int64            `json:"remainingItemCount"`
			ShardInfo          *metav1.ShardInfo `json:"shardInfo"`
		} `json:"metadata"`
		Items []partialMeta `json:"items"`
		Rows  []struct {
			Object *partialMeta `json:"object"`
		} `json:"rows"`
	}
	if err := decode(&list); err != nil {
		return ListSummary{}, err
	}
	s := ListSummary{
		Kind:                  schema.FromAPIVersionAndKind(list.APIVersion, list.Kind),
		ResourceVersion:       list.Metadata.ResourceVersion,
		ShardInfo:             list.Metadata.ShardInfo,
		HasRemainingItemCount: list.Metadata.RemainingItemCount != nil,
	}
	if list.Kind != kindTable {
		for _, it := range list.Items {
			s.Namespaces = append(s.Namespaces, it.Metadata.Namespace)
		}
		return s, nil
	}
	for _, row := range list.Rows {
		if row.Object == nil {
			s.NamespacesUnknown = true
			continue
		}
		s.Namespaces = append(s.Namespaces, row.Object.Metadata.Namespace)
	}
	return s, nil
}

func protoListSummary(body []byte) (ListSummary, error) {
	u, err := unwrapProto(body)
	if err != nil {
		return ListSummary{}, err
	}
	s := ListSummary{Kind: u.GroupVersionKind()}
	layoutKnown := checkLayout(s.Kind, true) == nil
	var meta metav1.ListMeta
	err = walkProto(u.Raw, func(num protowire.Number, typ protowire.Type, value, _ []byte) error {
		switch {
		case typ != protowire.BytesType:
		case num == fieldMetadata:
			return meta.Unmarshal(value) // a repeated ListMeta merges, as in a decoder
		case num == fieldItems && layoutKnown:
			ns, err := objectNamespace(value)
			s.Namespaces = append(s.Namespaces, ns)
			return err
		case num == fieldItems:
			s.NamespacesUnknown = true
		}
		return nil
	})
	s.ResourceVersion, s.ShardInfo, s.HasRemainingItemCount = meta.ResourceVersion, meta.ShardInfo, meta.RemainingItemCount != nil
	return s, err
}

// ExclusionPlan plans the second list of a probe of whether the server filters by shardSelector, one that tells
// even where lists cannot carry shardInfo. first is the answer to a list of one object without a shardSelector;
// the plan asks, at first's resourceVersion exactly, for one object of every namespace but that object's. A server
// that filters leaves the object out; one that ignores the shardSelector answers the same request as before, so
// with the same object (Prober.CheckProbe). ok is false when first shows no object to go by.
func ExclusionPlan(first ListSummary) (plan Plan, ok bool, err error) {
	if len(first.Namespaces) == 0 || first.NamespacesUnknown || first.ResourceVersion == "" {
		return Plan{}, false, nil
	}
	sel, err := shard.ShardSelector(shard.Point(shard.NamespaceHash(first.Namespaces[0])).Complement())
	if err != nil {
		return Plan{}, false, err
	}
	q := url.Values{
		"limit":                {"1"},
		"resourceVersion":      {first.ResourceVersion},
		"resourceVersionMatch": {string(metav1.ResourceVersionMatchExact)},
		ShardSelectorParam:     {sel},
	}
	return Plan{Query: q, ShardSelector: sel, VerifyShardInfo: true}, true, nil
}
