package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// jsonObject is a JSON object as its members in order, each value kept as raw bytes, so that a rewrite changes
// only the members it touches.
type jsonObject []jsonMember

type jsonMember struct {
	key   string
	value json.RawMessage
}

func parseJSONObject(data []byte) (jsonObject, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil {
		return nil, err
	} else if tok != json.Delim('{') {
		return nil, fmt.Errorf("want a JSON object, got %v", tok)
	}
	var obj jsonObject
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string) // an object key is always a string
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, fmt.Errorf("member %q: %w", key, err)
		}
		obj = append(obj, jsonMember{key: key, value: value})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON object")
	}
	return obj, nil
}

// get is the value of the last member named key, as a decoder would see it.
func (o jsonObject) get(key string) (json.RawMessage, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].key == key {
			return o[i].value, true
		}
	}
	return nil, false
}

// set replaces the value of every member named key, or adds one at the end.
func (o jsonObject) set(key string, value json.RawMessage) jsonObject {
	found := false
	for i := range o {
		if o[i].key == key {
			o[i].value, found = value, true
		}
	}
	if !found {
		o = append(o, jsonMember{key: key, value: value})
	}
	return o
}

// without is o with no member named key.
func (o jsonObject) without(key string) jsonObject {
	out := o[:0:0]
	for _, m := range o {
		if m.key != key {
			out = append(out, m)
		}
	}
	return out
}

func (o jsonObject) marshal() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(m.key) // a string always marshals
		b.Write(key)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}
