package filter

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/watch"
)

// Garbage and damaged bodies give errors, never a panic.
func TestGarbageNeverPanics(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range codecs {
		seeds := [][]byte{
			c.encode(t, configMapList()), c.encode(t, podList()), c.encode(t, pod(mine, "a")),
			c.watchStream(t, watchEvents()...),
		}
		if c.name != "protobuf" {
			seeds = append(seeds, c.encode(t, table(t, c, mine, foreign)),
				c.watchStream(t, watch.Event{Type: watch.Added, Object: table(t, c, foreign, mine)}))
		}
		for i := 0; i < 3000; i++ {
			body := mutate(rng, seeds[rng.IntN(len(seeds))])
			_, _ = FilterList(body, c.contentType, keepMine)
			_, _ = ReadListSummary(body, c.contentType)
			_, _ = WithoutRemainingItemCount(body, c.contentType)
			_, _ = ReadListHead(bytes.NewReader(body), c.contentType)
			_, _ = StampCreate(body, c.contentType, mine)
			_, _ = io.Copy(io.Discard, FilterWatch(bytes.NewReader(body), c.contentType, keepMine))
			_, _ = io.Copy(io.Discard, FilterWatch(bytes.NewReader(body), c.contentType, nil))
		}
	}
}

func mutate(rng *rand.Rand, seed []byte) []byte {
	b := bytes.Clone(seed)
	switch rng.IntN(4) {
	case 0: // truncate
		return b[:rng.IntN(len(b)+1)]
	case 1: // flip bytes
		for range 1 + rng.IntN(8) {
			b[rng.IntN(len(b))] = byte(rng.Uint32())
		}
		return b
	case 2: // random bytes
		r := make([]byte, rng.IntN(64))
		for i := range r {
			r[i] = byte(rng.Uint32())
		}
		return r
	}
	// splice: a prefix of seed and a suffix of itself
	i, j := rng.IntN(len(b)), rng.IntN(len(b))
	return append(b[:i:i], b[j:]...)
}

func FuzzFilterList(f *testing.F) {
	for _, c := range codecs {
		f.Add(c.encode(f, configMapList()), c.contentType)
	}
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		_, _ = FilterList(body, contentType, keepMine)
		_, _ = StampCreate(body, contentType, mine)
		_, _ = io.Copy(io.Discard, FilterWatch(bytes.NewReader(body), contentType, keepMine))
		_, _ = io.Copy(io.Discard, FilterWatch(bytes.NewReader(body), contentType, nil))
		if h, err := ReadListHead(bytes.NewReader(body), contentType); err == nil && !bytes.HasPrefix(body, h.Read) {
			t.Errorf("ReadListHead read %q, not the start of the body", h.Read)
		}
	})
}
