package declarative

import (
	"container/list"
	"errors"
	"fmt"
	"strings"
	"sync"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// maxCachedSource bounds the compiled chunks the cache keeps, by the size of their names and source text (a
// compiled chunk takes a few times its source). The scripts of every customization a cluster serves fit many times
// over; what falls out is compiled again when next needed.
const maxCachedSource = 4 << 20

// chunks caches compiled chunks, so that rebuilding the interpreter, or validating a customization again, does not
// parse scripts that have not changed. Compiled chunks are immutable, so VMs share them.
var chunks = newChunkCache(maxCachedSource)

// compile parses and compiles src, reporting errors with the chunk name and line.
func compile(name, src string) (*lua.FunctionProto, error) {
	k := chunkKey{name: name, src: src}
	if p := chunks.get(k); p != nil {
		return p, nil
	}
	chunk, err := parse.Parse(strings.NewReader(src), name)
	if err != nil {
		// The parser's message already names the chunk and the line, e.g. "x line:4(column:4) near 'en': ...".
		return nil, errors.New(strings.Join(strings.Fields(err.Error()), " "))
	}
	proto, err := lua.Compile(chunk, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	chunks.add(k, proto)
	return proto, nil
}

// chunkKey names a compiled chunk. The name is part of it because a chunk keeps the name it was compiled under and
// its errors start with it: the same script in two customizations is two chunks.
type chunkKey struct{ name, src string }

func (k chunkKey) size() int { return len(k.name) + len(k.src) }

// chunkCache keeps the chunks used last, up to max bytes of names and source. It is safe for concurrent use.
type chunkCache struct {
	mu    sync.Mutex
	max   int
	size  int
	order *list.List // of *chunkEntry, the last used first
	byKey map[chunkKey]*list.Element
}

type chunkEntry struct {
	key   chunkKey
	proto *lua.FunctionProto
}

func newChunkCache(max int) *chunkCache {
	return &chunkCache{max: max, order: list.New(), byKey: map[chunkKey]*list.Element{}}
}

// get returns the chunk of k, or nil.
func (c *chunkCache) get(k chunkKey) *lua.FunctionProto {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[k]
	if !ok {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*chunkEntry).proto
}

// add keeps proto as the chunk of k, dropping the chunks used longest ago to stay within max. A chunk larger than
// max is not kept.
func (c *chunkCache) add(k chunkKey, proto *lua.FunctionProto) {
	if k.size() > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[k]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.byKey[k] = c.order.PushFront(&chunkEntry{key: k, proto: proto})
	c.size += k.size()
	for c.size > c.max {
		last := c.order.Back()
		old := c.order.Remove(last).(*chunkEntry)
		delete(c.byKey, old.key)
		c.size -= old.key.size()
	}
}
