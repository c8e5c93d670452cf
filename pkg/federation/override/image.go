package override

import (
	"cmp"
	"fmt"
	"regexp"
	"strings"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// imageRef is an image reference split into [registry/]repository[:tag][@digest]. ref keeps its separators
// (":1.27", "@sha256:...", or both), so an image is rebuilt exactly as it was when nothing changes.
type imageRef struct {
	registry, repository, ref string
}

// digestHexLengths are the digest algorithms of the OCI image spec, each with the length of its hex encoding. Only
// these make a digest: a looser pattern would take "v1.0.0sha256" for an algorithm and write a reference no
// runtime can pull.
var digestHexLengths = map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}

var lowerHex = regexp.MustCompile(`^[a-f0-9]+$`)

// isDigest says whether s is an image digest as a tag value gives it: algorithm, colon, hex.
func isDigest(s string) bool {
	alg, hex, ok := strings.Cut(s, ":")
	return ok && len(hex) == digestHexLengths[alg] && lowerHex.MatchString(hex)
}

// tagPattern is an image tag, as the OCI distribution spec has it.
var tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// parseImage splits an image reference. The first path segment is a registry only when it looks like a host (it
// has a dot or a port, or is localhost), as container runtimes decide: "nginx" and "library/nginx" have none.
func parseImage(s string) imageRef {
	var img imageRef
	if at := strings.Index(s, "@"); at >= 0 {
		img.ref, s = s[at:], s[:at]
	}
	if colon := strings.LastIndex(s, ":"); colon > strings.LastIndex(s, "/") {
		img.ref, s = s[colon:]+img.ref, s[:colon]
	}
	if slash := strings.Index(s, "/"); slash >= 0 {
		if first := s[:slash]; strings.ContainsAny(first, ".:") || first == "localhost" {
			img.registry, s = first, s[slash+1:]
		}
	}
	img.repository = s
	return img
}

// tagAndDigest are the image's tag and digest, without their separators; either may be empty.
func (img imageRef) tagAndDigest() (tag, dig string) {
	ref, dig, _ := strings.Cut(img.ref, "@")
	return strings.TrimPrefix(ref, ":"), dig
}

func (img imageRef) String() string {
	s := img.repository + img.ref
	if img.registry != "" {
		s = img.registry + "/" + s
	}
	return s
}

// overrideImage changes one component of image, as Karmada does: add appends the value to the registry, the
// repository or the tag ("mirror.example" + ".cn", "1.27" + "-alpine"; to the digest of an image without a tag;
// on an image with neither, it sets one); replace sets the component, remove drops it. A tag that is a digest
// ("sha256:<hex>", or "@sha256:<hex>"; sha384 and sha512 too) makes the reference a digest; one that is neither a
// tag nor a digest is an error, as is a digest added to a tag ("v1.0.0sha256:<hex>"). The repository cannot be
// removed: an image without one is no image.
func overrideImage(image string, o policyv1alpha1.ImageOverrider) (string, error) {
	img := parseImage(image)
	var field *string
	value, op := o.Value, o.Operator
	switch o.Component {
	case policyv1alpha1.Registry:
		field = &img.registry
	case policyv1alpha1.Repository:
		field = &img.repository
		if op == policyv1alpha1.OverriderOpRemove {
			return "", fmt.Errorf("the repository of image %q cannot be removed", image)
		}
	case policyv1alpha1.Tag:
		field = &img.ref
		if op == policyv1alpha1.OverriderOpRemove {
			break
		}
		ref := strings.TrimPrefix(value, "@")
		if op == policyv1alpha1.OverriderOpAdd {
			// A digest names the image of the old tag: with a tag to add to, it goes.
			tag, dig := img.tagAndDigest()
			ref, op = cmp.Or(tag, dig)+value, policyv1alpha1.OverriderOpReplace
		}
		switch {
		case isDigest(ref):
			value = "@" + ref
		case tagPattern.MatchString(ref):
			value = ":" + ref
		default:
			return "", fmt.Errorf("image %q: %q is neither a tag nor a digest", image, ref)
		}
	default:
		return "", fmt.Errorf("unknown image component %q", o.Component)
	}
	switch op {
	case policyv1alpha1.OverriderOpAdd:
		*field += value
	case policyv1alpha1.OverriderOpReplace:
		*field = value
	case policyv1alpha1.OverriderOpRemove:
		*field = ""
	default:
		return "", fmt.Errorf("unknown operator %q", op)
	}
	return img.String(), nil
}
