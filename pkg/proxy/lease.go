package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fedmesh/fedmesh/pkg/proxy/config"
)

// leaseRename gives each shard its own leader election without the operator knowing: requests for the
// configured Lease go to <name>-shard-<id>, and responses carry the configured name back.
type leaseRename struct{ from, to string }

// leaseRenameFor returns the rename that applies to req, if any.
func leaseRenameFor(own *config.Ownership, req *Request) (leaseRename, bool) {
	le := own.LeaderElection
	if le == nil || req.APIGroup != "coordination.k8s.io" || req.Resource != "leases" || req.Subresource != "" {
		return leaseRename{}, false
	}
	if le.LeaseNamespace != "" && req.Namespace != le.LeaseNamespace {
		return leaseRename{}, false
	}
	// A create names the Lease in its body only; every other verb but a list's in the path. A list or watch by
	// metadata.name has that name too, but it is a list: it passes unrenamed, and shows the Lease of that very
	// name if there is one (left from before sharding), not the shard's.
	if req.Verb == "list" || req.Verb == "watch" || req.Verb == "deletecollection" {
		return leaseRename{}, false
	}
	if req.Name != le.LeaseName && !(req.Verb == "create" && req.Name == "") {
		return leaseRename{}, false
	}
	return leaseRename{from: le.LeaseName, to: own.LeaseName()}, true
}

// request rewrites the path and, for a create or update, the body, and reports whether req is for the
// configured Lease. A create of another Lease is left as it was, for the fence to judge like any write.
func (l leaseRename) request(r *http.Request, req *Request) (bool, error) {
	if req.Name == l.from {
		req.UpstreamPath = strings.TrimSuffix(req.UpstreamPath, "/"+l.from) + "/" + l.to
	}
	if r.Body == nil || (req.Verb != "create" && req.Verb != "update") {
		return true, nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return false, err
	}
	out, renamed, err := renameLease(body, r.Header.Get("Content-Type"), l.from, l.to)
	if err != nil {
		return false, fmt.Errorf("lease %s: %w", l.from, err)
	}
	ours := renamed || req.Verb != "create"
	if !ours {
		out = body
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(out)), int64(len(out))
	r.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return ours, nil
}

// response carries the configured name back to the operator.
func (l leaseRename) response(resp *http.Response) error {
	if resp.StatusCode >= 300 {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	out, _, err := renameLease(body, resp.Header.Get("Content-Type"), l.to, l.from)
	if err != nil {
		out = body // not a Lease (a Status, say): nothing to rename
	}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(out)), int64(len(out))
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return nil
}

// renameLease decodes a Lease in any encoding the API server speaks (JSON, protobuf, CBOR), renames it from
// `from` to `to`, and encodes it the same way.
func renameLease(body []byte, contentType, from, to string) ([]byte, bool, error) {
	if contentType == "" {
		contentType = runtime.ContentTypeJSON
	}
	info, err := serializerFor(contentType)
	if err != nil {
		return nil, false, fmt.Errorf("content type %q: %w", contentType, err)
	}
	lease := &coordinationv1.Lease{}
	obj, _, err := info.Serializer.Decode(body, nil, lease)
	if err != nil {
		return nil, false, err
	}
	lease, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return nil, false, fmt.Errorf("not a Lease: %T", obj)
	}
	if lease.Name != from {
		return body, false, nil
	}
	lease.Name = to
	var out bytes.Buffer
	encoder := codecs.EncoderForVersion(info.Serializer, coordinationv1.SchemeGroupVersion)
	if err := encoder.Encode(lease, &out); err != nil {
		return nil, false, err
	}
	return out.Bytes(), true, nil
}
