package override

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"

	yamlv2 "go.yaml.in/yaml/v2"
	yamlv3 "go.yaml.in/yaml/v3"
)

// The documents a fieldOverrider patches (a ConfigMap's JSON or YAML file, say) are decoded with their numbers as
// json.Number, their text, and encoded back from it: a number the patch does not touch must reach the members as
// it was, though Go's float64 cannot hold an integer beyond 2^53 or a long decimal exactly.

// decodeJSON decodes one JSON value, keeping its numbers' text.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// decodeYAML decodes a YAML document as sigs.k8s.io/yaml's YAMLToJSON does (YAML 1.1, so "yes" is true, as Karmada
// reads these documents), but keeping its numbers' text where it is a JSON number.
func decodeYAML(raw []byte) (any, error) {
	var doc yamlValue
	if err := yamlv2.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	return doc.v, nil
}

// yamlValue is a YAML node decoded into the values JSON decodes to, numbers as json.Number.
type yamlValue struct{ v any }

func (y *yamlValue) UnmarshalYAML(unmarshal func(any) error) error {
	// Each kind is tried without decoding the node's subtree generically first: a node of another kind fails at
	// once, so the whole document is decoded once (linear in its size, whatever its depth).
	var m map[any]yamlValue
	if err := unmarshal(&m); err == nil && m != nil {
		out := make(map[string]any, len(m))
		for k, e := range m {
			key, err := yamlKey(k)
			if err != nil {
				return err
			}
			out[key] = e.v
		}
		y.v = out
		return nil
	} else if err != nil && !isTypeError(err) {
		return err
	}
	var s []yamlValue
	if err := unmarshal(&s); err == nil && s != nil {
		out := make([]any, len(s))
		for i, e := range s {
			out[i] = e.v
		}
		y.v = out
		return nil
	} else if err != nil && !isTypeError(err) {
		return err
	}
	var v any
	if err := unmarshal(&v); err != nil {
		return err
	}
	switch v := v.(type) {
	case map[any]any:
		if len(v) > 0 { // only an empty mapping gets here: a mapping decodes above
			return fmt.Errorf("a mapping could not be read")
		}
		y.v = map[string]any{}
	case []any:
		if len(v) > 0 {
			return fmt.Errorf("a sequence could not be read")
		}
		y.v = []any{}
	case int, int64, uint64, float64:
		var text string
		if err := unmarshal(&text); err != nil {
			return err
		}
		n, err := jsonNumber(text, v)
		if err != nil {
			return err
		}
		y.v = n
	default:
		y.v = v
	}
	return nil
}

// isTypeError says whether err is yaml.v2's "the node is not of that kind".
func isTypeError(err error) bool {
	var te *yamlv2.TypeError
	return errors.As(err, &te)
}

// UnmarshalText takes a quoted "null" or "~": yaml.v2 reads their text as null before it would call UnmarshalYAML,
// and hands it as text to a type that takes text.
func (y *yamlValue) UnmarshalText(text []byte) error {
	y.v = string(text)
	return nil
}

var jsonNumberText = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// jsonNumber is a YAML number as JSON has it: its text when that is a JSON number ("1.50"), else its value written
// out ("0x1F" is 31, "+1" is 1).
func jsonNumber(text string, v any) (json.Number, error) {
	if jsonNumberText.MatchString(text) {
		return json.Number(text), nil
	}
	switch v := v.(type) {
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return "", fmt.Errorf("%s is not a number JSON can hold", text)
		}
		return json.Number(strconv.FormatFloat(v, 'g', -1, 64)), nil
	default:
		return json.Number(fmt.Sprint(v)), nil
	}
}

// yamlKey is a YAML mapping key as a JSON object key, as YAMLToJSON writes it.
func yamlKey(k any) (string, error) {
	switch k := k.(type) {
	case string:
		return k, nil
	case int, int64, uint64, bool:
		return fmt.Sprint(k), nil
	case float64:
		return strconv.FormatFloat(k, 'g', -1, 32), nil
	default:
		return "", fmt.Errorf("a mapping key %v (%T) cannot be a JSON object key", k, k)
	}
}

// encodeYAML writes doc, as decodeJSON or decodeYAML decode it, as YAML in the style of sigs.k8s.io/yaml (keys
// sorted, two-space indents, "- " at the indentation of its key), its numbers as their text.
func encodeYAML(doc any) ([]byte, error) {
	node, err := yamlNode(doc)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := yamlv3.NewEncoder(&b)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(node); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func yamlNode(v any) (*yamlv3.Node, error) {
	switch v := v.(type) {
	case map[string]any:
		n := &yamlv3.Node{Kind: yamlv3.MappingNode}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			key, err := yamlNode(k)
			if err != nil {
				return nil, err
			}
			value, err := yamlNode(v[k])
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, key, value)
		}
		return n, nil
	case []any:
		n := &yamlv3.Node{Kind: yamlv3.SequenceNode}
		for _, e := range v {
			value, err := yamlNode(e)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, value)
		}
		return n, nil
	case json.Number:
		// Plain, without a tag: YAML reads every JSON number as a number.
		return &yamlv3.Node{Kind: yamlv3.ScalarNode, Value: string(v)}, nil
	default:
		// Strings that YAML 1.1 would read as something else ("yes", "1:20") come out quoted.
		n := &yamlv3.Node{}
		if err := n.Encode(v); err != nil {
			return nil, err
		}
		return n, nil
	}
}
