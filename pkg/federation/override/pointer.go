package override

import (
	"fmt"
	"strconv"
	"strings"

	policyv1alpha1 "github.com/fedmesh/fedmesh/pkg/apis/policy/v1alpha1"
)

// parsePointer splits a JSON pointer (RFC 6901) into its unescaped reference tokens. The empty pointer, the whole
// document, is refused: every overrider names a field.
func parsePointer(p string) ([]string, error) {
	if p == "" || p[0] != '/' {
		return nil, fmt.Errorf("path %q is not a JSON pointer: it must start with /", p)
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		// ~1 before ~0, so "~01" stays the literal "~1".
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

// get returns the value at path in doc.
func get(doc any, path string) (any, error) {
	tokens, err := parsePointer(path)
	if err != nil {
		return nil, err
	}
	node := doc
	for i, tok := range tokens {
		switch n := node.(type) {
		case map[string]any:
			child, ok := n[tok]
			if !ok {
				return nil, fmt.Errorf("%s: not found", prefix(tokens, i+1))
			}
			node = child
		case []any:
			idx, err := arrayIndex(tok, len(n), false)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", prefix(tokens, i+1), err)
			}
			node = n[idx]
		default:
			return nil, fmt.Errorf("%s: not found: %s is not an object or array", prefix(tokens, i+1), prefix(tokens, i))
		}
	}
	return node, nil
}

// patch applies one JSON-patch operation (RFC 6902 add, remove or replace) to doc and returns the result; doc's maps
// and slices are changed in place, but an insertion into an array returns a new slice, so always use the result.
func patch(doc any, op policyv1alpha1.OverriderOperator, path string, value any) (any, error) {
	tokens, err := parsePointer(path)
	if err != nil {
		return nil, err
	}
	return patchAt(doc, tokens, 0, op, value)
}

func patchAt(node any, tokens []string, i int, op policyv1alpha1.OverriderOperator, value any) (any, error) {
	tok, last, here := tokens[i], i == len(tokens)-1, prefix(tokens, i+1)
	switch n := node.(type) {
	case map[string]any:
		child, ok := n[tok]
		if !ok && (!last || op != policyv1alpha1.OverriderOpAdd) {
			return nil, fmt.Errorf("%s: not found", here)
		}
		if !last {
			c, err := patchAt(child, tokens, i+1, op, value)
			if err != nil {
				return nil, err
			}
			n[tok] = c
			return n, nil
		}
		switch op {
		case policyv1alpha1.OverriderOpAdd, policyv1alpha1.OverriderOpReplace:
			n[tok] = value
		case policyv1alpha1.OverriderOpRemove:
			delete(n, tok)
		default:
			return nil, fmt.Errorf("%s: unknown operator %q", here, op)
		}
		return n, nil
	case []any:
		if last && op == policyv1alpha1.OverriderOpAdd && tok == "-" {
			return append(n, value), nil
		}
		idx, err := arrayIndex(tok, len(n), last && op == policyv1alpha1.OverriderOpAdd)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", here, err)
		}
		if !last {
			c, err := patchAt(n[idx], tokens, i+1, op, value)
			if err != nil {
				return nil, err
			}
			n[idx] = c
			return n, nil
		}
		switch op {
		case policyv1alpha1.OverriderOpAdd:
			out := make([]any, 0, len(n)+1)
			out = append(append(append(out, n[:idx]...), value), n[idx:]...)
			return out, nil
		case policyv1alpha1.OverriderOpReplace:
			n[idx] = value
			return n, nil
		case policyv1alpha1.OverriderOpRemove:
			return append(n[:idx:idx], n[idx+1:]...), nil
		default:
			return nil, fmt.Errorf("%s: unknown operator %q", here, op)
		}
	default:
		return nil, fmt.Errorf("%s: not found: %s is not an object or array", here, prefix(tokens, i))
	}
}

// arrayIndex parses an array index token; the length itself is allowed only where add may append. A negative index
// -N counts from the end, as in json-patch v5, which Karmada applies patches with: -1 is the last element, and for
// an add, which makes the array one longer, -1 appends.
func arrayIndex(tok string, length int, mayAppend bool) (int, error) {
	// RFC 6901: "0", or digits without a leading zero; beyond it, a minus sign before digits other than "0".
	digits, negative := strings.CutPrefix(tok, "-")
	idx, err := strconv.Atoi(digits)
	leadingZero := len(digits) > 1 && digits[0] == '0'
	if err != nil || strings.TrimLeft(digits, "0123456789") != "" || leadingZero || (negative && idx == 0) {
		return 0, fmt.Errorf("%q is not an array index", tok)
	}
	if negative {
		end := length
		if mayAppend {
			end++
		}
		if idx > end {
			return 0, fmt.Errorf("index %s is out of range (length %d)", tok, length)
		}
		return end - idx, nil
	}
	if idx > length || (idx == length && !mayAppend) {
		return 0, fmt.Errorf("index %d is out of range (length %d)", idx, length)
	}
	return idx, nil
}

// prefix is the pointer of the first n tokens, for error messages.
func prefix(tokens []string, n int) string {
	var b strings.Builder
	for _, t := range tokens[:n] {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}
