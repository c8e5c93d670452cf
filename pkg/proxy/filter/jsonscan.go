package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// jsonScanner reads a JSON text in place, one token or value at a time, and builds nothing: enough to pick a
// few members out of a large object and step over the rest. Stepping over a value finds where it ends (strings
// with their escapes, nesting) without checking all of its syntax, so a scan proves only what it read.
type jsonScanner struct {
	data []byte
	pos  int
}

var errJSONEnd = errors.New("unexpected end of JSON")

func (s *jsonScanner) syntax(what string) error {
	if s.pos >= len(s.data) {
		return fmt.Errorf("%w, want %s", errJSONEnd, what)
	}
	return fmt.Errorf("JSON: want %s at offset %d, got %q", what, s.pos, s.data[s.pos])
}

func (s *jsonScanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// consume steps over the next token if it is the byte c.
func (s *jsonScanner) consume(c byte) bool {
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

// null steps over the next value if it is null.
func (s *jsonScanner) null() bool {
	s.skipSpace()
	if bytes.HasPrefix(s.data[s.pos:], []byte("null")) {
		s.pos += len("null")
		return true
	}
	return false
}

// strOrNull reads a string value, or null as the empty string, as a decoder into a Go string would.
func (s *jsonScanner) strOrNull() ([]byte, error) {
	if s.null() {
		return nil, nil
	}
	return s.str()
}

// str reads the string at the scanner. Without escapes (the usual case: keys, names, event types) it is a slice
// of the data, else a decoded copy.
func (s *jsonScanner) str() ([]byte, error) {
	s.skipSpace()
	start := s.pos
	if err := s.skipString(); err != nil {
		return nil, err
	}
	raw := s.data[start+1 : s.pos-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw, nil
	}
	var v string
	if err := json.Unmarshal(s.data[start:s.pos], &v); err != nil {
		return nil, fmt.Errorf("JSON string at offset %d: %w", start, err)
	}
	return []byte(v), nil
}

// skipString steps over the string that starts at the scanner.
func (s *jsonScanner) skipString() error {
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return s.syntax("a string")
	}
	for i := s.pos + 1; ; i++ {
		j := bytes.IndexByte(s.data[i:], '"')
		if j < 0 {
			return errJSONEnd
		}
		i += j
		// The quote ends the string unless an odd number of backslashes escapes it.
		k := i
		for s.data[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			s.pos = i + 1
			return nil
		}
	}
}

// skip steps over the next value, whatever it is.
func (s *jsonScanner) skip() error {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return s.syntax("a value")
	}
	switch s.data[s.pos] {
	case '"':
		return s.skipString()
	case '{', '[':
		return s.skipNested()
	case ',', ':', '}', ']':
		return s.syntax("a value")
	}
	start := s.pos // a number, true, false or null
	for s.pos < len(s.data) && !isJSONDelimiter(s.data[s.pos]) {
		s.pos++
	}
	if s.pos == start {
		return s.syntax("a value")
	}
	return nil
}

// skipNested steps over the object or array that starts at the scanner, counting brackets outside strings.
func (s *jsonScanner) skipNested() error {
	depth := 0
	for s.pos < len(s.data) {
		if !jsonStructural[s.data[s.pos]] {
			s.pos++
			continue
		}
		switch s.data[s.pos] {
		case '"':
			if err := s.skipString(); err != nil {
				return err
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.pos++
				return nil
			}
		}
		s.pos++
	}
	return errJSONEnd
}

// jsonStructural marks the bytes that skipNested must look at; it steps over all others one by one.
var jsonStructural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

func isJSONDelimiter(c byte) bool {
	switch c {
	case ',', ':', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// members walks the object that starts at the scanner, calling fn with each key (decoded, and valid only during
// the call) and the scanner at the key's value, which fn must read or skip. When fn says stop, members returns
// at once, in the middle of the object.
func (s *jsonScanner) members(fn func(key []byte) (stop bool, err error)) error {
	if !s.consume('{') {
		return s.syntax("a JSON object")
	}
	if s.consume('}') {
		return nil
	}
	for {
		key, err := s.str()
		if err != nil {
			return err
		}
		if !s.consume(':') {
			return s.syntax("':'")
		}
		if stop, err := fn(key); stop || err != nil {
			return err
		}
		if s.consume(',') {
			continue
		}
		if s.consume('}') {
			return nil
		}
		return s.syntax("',' or '}'")
	}
}
