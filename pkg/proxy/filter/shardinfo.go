package filter

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ShardInfoSelector reads metadata.shardInfo.selector of a list response (JSON, CBOR or protobuf), the
// shardSelector that the API server says it applied (KEP-5866). ok is false when the list has no shardInfo: the
// server did not filter, because it does not know shardSelector or has the feature gate off.
func ShardInfoSelector(listBody []byte, contentType string) (selector string, ok bool, err error) {
	f, err := parseFormat(contentType)
	if err != nil {
		return "", false, err
	}
	var info *metav1.ShardInfo
	switch f {
	case formatJSON, formatCBOR:
		var list struct {
			Metadata struct {
				ShardInfo *metav1.ShardInfo `json:"shardInfo"`
			} `json:"metadata"`
		}
		if f == formatJSON {
			err = json.Unmarshal(listBody, &list)
		} else {
			err = cborPartial.Unmarshal(listBody, &list)
		}
		info = list.Metadata.ShardInfo
	case formatProtobuf:
		info, err = protoShardInfo(listBody)
	}
	if err != nil {
		return "", false, fmt.Errorf("read shardInfo: %w", err)
	}
	if info == nil {
		return "", false, nil
	}
	return info.Selector, true, nil
}

// protoShardInfo reads the ListMeta of any enveloped protobuf list (field 1) and its shardInfo.
func protoShardInfo(body []byte) (*metav1.ShardInfo, error) {
	u, err := unwrapProto(body)
	if err != nil {
		return nil, err
	}
	var meta metav1.ListMeta
	err = walkProto(u.Raw, func(num protowire.Number, typ protowire.Type, value, _ []byte) error {
		if num != fieldMetadata || typ != protowire.BytesType {
			return nil
		}
		return meta.Unmarshal(value) // a repeated ListMeta would merge; the last one is what a decoder keeps
	})
	return meta.ShardInfo, err
}
