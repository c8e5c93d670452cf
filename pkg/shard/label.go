package shard

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// BucketLabel is the label that the manager stamps on objects in label mode. Its value is the hash bucket of the
// object's namespace: the top 8 bits of the namespace hash as 2 lowercase hex digits, so 256 buckets.
const BucketLabel = "mesh.fedmesh.io/hash-bucket"

// bucketBits is how many low bits of a hash lie below the bucket: 2^56 hashes per bucket.
const bucketBits = 56

// Bucket is the hash bucket of h: its top 8 bits.
func Bucket(h uint64) uint8 { return uint8(h >> bucketBits) }

// BucketRange is every hash in bucket b.
func BucketRange(b uint8) Range {
	first := uint64(b) << bucketBits
	return Range{First: first, Last: first | (1<<bucketBits - 1)}
}

// BucketLabelValue is the value of BucketLabel for objects in namespace ns, e.g. "3f".
func BucketLabelValue(ns string) string { return bucketValue(Bucket(NamespaceHash(ns))) }

func bucketValue(b uint8) string { return fmt.Sprintf("%02x", b) }

// LabelRequirement is "mesh.fedmesh.io/hash-bucket in (...)" listing every bucket that s touches. It is exact when
// s owns each of those buckets whole; when s owns only part of some bucket (a carved canary namespace, a range
// edge that is not on a bucket boundary) the requirement selects too much, and the caller must also filter on the
// client side with ContainsNamespace. An empty s gives ErrEmptySet. For a full s no filter is needed at all, and
// callers should skip it: the requirement would hide objects that have not been labeled yet.
func LabelRequirement(s Set) (req labels.Requirement, exact bool, err error) {
	if s.Empty() {
		return labels.Requirement{}, false, ErrEmptySet
	}
	var values []string
	exact = true
	for b := range 256 {
		bucket := NewSet(BucketRange(uint8(b)))
		if !s.Overlaps(bucket) {
			continue
		}
		values = append(values, bucketValue(uint8(b)))
		exact = exact && s.ContainsSet(bucket)
	}
	r, err := labels.NewRequirement(BucketLabel, selection.In, values)
	if err != nil {
		return labels.Requirement{}, false, err // cannot happen: the key and values are valid
	}
	return *r, exact, nil
}

// MergeLabelSelector adds req to the label selector a client sent, keeping every requirement of the client's, so
// that the server returns what the client asked for within the shard's buckets. The result is in the canonical
// form of k8s.io/apimachinery/pkg/labels (requirements sorted by key).
func MergeLabelSelector(clientSelector string, req labels.Requirement) (string, error) {
	sel, err := labels.Parse(clientSelector)
	if err != nil {
		return "", fmt.Errorf("client label selector %q: %w", clientSelector, err)
	}
	return sel.Add(req).String(), nil
}
