package handoff

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Board holds a value of type T per object. Its zero value is empty and ready.
type Board[T any] struct {
	mu     sync.Mutex
	held   map[types.NamespacedName]entry[T]
	notify func(types.NamespacedName)
}

type entry[T any] struct {
	uid types.UID
	v   T
}

// Subscribe makes notify the function told of each object with a new value.
func (b *Board[T]) Subscribe(notify func(types.NamespacedName)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.notify = notify
}

// Put records v as obj's value unless same, given the value held for obj (nil when none), says that v tells
// nothing new. It reports whether it recorded v, and then tells the subscriber. same runs with the board locked.
func (b *Board[T]) Put(obj metav1.Object, v T, same func(held *T) bool) bool {
	key := keyOf(obj)
	b.mu.Lock()
	var held *T
	if e, ok := b.held[key]; ok && e.uid == obj.GetUID() {
		held = &e.v
	}
	if same(held) {
		b.mu.Unlock()
		return false
	}
	if b.held == nil {
		b.held = map[types.NamespacedName]entry[T]{}
	}
	b.held[key] = entry[T]{uid: obj.GetUID(), v: v}
	notify := b.notify
	b.mu.Unlock()
	if notify != nil {
		notify(key)
	}
	return true
}

// Take is the value held for obj, when there is one and keep keeps it. A namesake's value, and one keep refuses,
// are dropped. keep runs with the board locked.
func (b *Board[T]) Take(obj metav1.Object, keep func(T) bool) (T, bool) {
	key := keyOf(obj)
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.held[key]
	if ok && (e.uid != obj.GetUID() || !keep(e.v)) {
		delete(b.held, key)
		ok = false
	}
	if !ok {
		var zero T
		return zero, false
	}
	return e.v, true
}

// Forget drops the value of the object key, which is gone (or no longer this process's).
func (b *Board[T]) Forget(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.held, key)
}

func keyOf(obj metav1.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}
