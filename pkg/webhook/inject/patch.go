package inject

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
)

// changePatch is the JSON patch that turns before into after, two values of the same Go type (the pod as decoded
// and as Inject returns it), to apply to the document before was decoded from. That document may hold fields the
// type does not (an API server newer than this k8s.io/api): the patch touches only what changed between before and
// after, so it leaves them be, where a diff of the document against after would remove each of them. Lists are
// matched element by element (longest common subsequence), so an element Inject inserts is added at its place and
// the ones after it are left alone, not rewritten a place further without their unknown fields.
func changePatch(before, after any) ([]jsonpatch.Operation, error) {
	a, err := genericJSON(before)
	if err != nil {
		return nil, err
	}
	b, err := genericJSON(after)
	if err != nil {
		return nil, err
	}
	return diffValues("", a, b, nil), nil
}

// genericJSON is v as JSON decoded into maps and slices, numbers kept as written.
func genericJSON(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	return out, dec.Decode(&out)
}

func diffValues(path string, a, b any, ops []jsonpatch.Operation) []jsonpatch.Operation {
	switch av := a.(type) {
	case map[string]any:
		if bv, ok := b.(map[string]any); ok {
			return diffObjects(path, av, bv, ops)
		}
	case []any:
		if bv, ok := b.([]any); ok {
			return diffLists(path, av, bv, ops)
		}
	}
	if reflect.DeepEqual(a, b) {
		return ops
	}
	return append(ops, jsonpatch.NewOperation("replace", path, b))
}

func diffObjects(path string, a, b map[string]any, ops []jsonpatch.Operation) []jsonpatch.Operation {
	for _, k := range sortedKeys(b) {
		// A null member may be left out of the document sent (as a field's zero value is): add, not replace, it.
		if av, ok := a[k]; ok && av != nil {
			ops = diffValues(member(path, k), av, b[k], ops)
		} else if b[k] != nil {
			ops = append(ops, jsonpatch.NewOperation("add", member(path, k), b[k]))
		}
	}
	for _, k := range sortedKeys(a) {
		if _, ok := b[k]; !ok {
			ops = append(ops, jsonpatch.NewOperation("remove", member(path, k), nil))
		}
	}
	return ops
}

// diffLists keeps the elements of the longest common subsequence of a and b in place. Between two kept ones, the
// elements of a that go and those of b that come are paired in order and each pair diffed (an element Inject
// changed, such as a container it points at the proxy), the rest removed or added. The operations' indexes are
// those of the list as the operations before them left it.
func diffLists(path string, a, b []any, ops []jsonpatch.Operation) []jsonpatch.Operation {
	aKeys, bKeys := encodeAll(a), encodeAll(b)
	kept := commonSubsequence(aKeys, bKeys)
	at := 0 // the index in the list as patched so far
	var gone, come []any
	flush := func() {
		paired := min(len(gone), len(come))
		for k := range paired {
			ops = diffValues(member(path, strconv.Itoa(at)), gone[k], come[k], ops)
			at++
		}
		for range gone[paired:] {
			ops = append(ops, jsonpatch.NewOperation("remove", member(path, strconv.Itoa(at)), nil))
		}
		for _, v := range come[paired:] {
			ops = append(ops, jsonpatch.NewOperation("add", member(path, strconv.Itoa(at)), v))
			at++
		}
		gone, come = gone[:0], come[:0]
	}
	i, j := 0, 0
	for _, k := range kept {
		for ; i < k[0]; i++ {
			gone = append(gone, a[i])
		}
		for ; j < k[1]; j++ {
			come = append(come, b[j])
		}
		flush()
		i, j, at = i+1, j+1, at+1
	}
	gone, come = append(gone, a[i:]...), append(come, b[j:]...)
	flush()
	return ops
}

// commonSubsequence is a longest common subsequence of a and b, as pairs of indexes {in a, in b}, increasing.
// Inject only prepends, appends and changes elements in place, so the lists share most of their heads and tails:
// those are kept as they are, and only what lies between them (a few elements, where a pod may have thousands of
// env vars) goes through the quadratic table.
func commonSubsequence(a, b []string) [][2]int {
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	kept := make([][2]int, 0, head+tail)
	for k := range head {
		kept = append(kept, [2]int{k, k})
	}
	midA, midB := a[head:len(a)-tail], b[head:len(b)-tail]
	// common[i][j] is the length of the longest common subsequence of midA[i:] and midB[j:].
	common := make([][]int, len(midA)+1)
	for i := range common {
		common[i] = make([]int, len(midB)+1)
	}
	for i := len(midA) - 1; i >= 0; i-- {
		for j := len(midB) - 1; j >= 0; j-- {
			if midA[i] == midB[j] {
				common[i][j] = common[i+1][j+1] + 1
			} else {
				common[i][j] = max(common[i+1][j], common[i][j+1])
			}
		}
	}
	for i, j := 0, 0; i < len(midA) && j < len(midB); {
		switch {
		case midA[i] == midB[j]:
			kept = append(kept, [2]int{head + i, head + j})
			i, j = i+1, j+1
		case common[i+1][j] >= common[i][j+1]:
			i++
		default:
			j++
		}
	}
	for k := range tail {
		kept = append(kept, [2]int{len(a) - tail + k, len(b) - tail + k})
	}
	return kept
}

// encodeAll is each element of list as JSON, object members sorted, to compare elements as strings: once per
// element, not a deep comparison per pair.
func encodeAll(list []any) []string {
	keys := make([]string, len(list))
	for i, v := range list {
		// Values decoded from JSON (maps, slices, strings, json.Number, bools, nil) always encode.
		raw, _ := json.Marshal(v)
		keys[i] = string(raw)
	}
	return keys
}

// member is the JSON pointer of key in the value at path.
func member(path, key string) string {
	return path + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
