package handoff

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestBoard(t *testing.T) {
	obj := func(uid types.UID) metav1.Object { return &metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: uid} }
	never := func(*int) bool { return false }
	always := func(int) bool { return true }
	var b Board[int]
	var told []types.NamespacedName
	b.Subscribe(func(key types.NamespacedName) { told = append(told, key) })

	if _, ok := b.Take(obj("u1"), always); ok {
		t.Error("a value taken from an empty board")
	}
	if !b.Put(obj("u1"), 1, never) {
		t.Error("Put refused with nothing held")
	}
	var seen *int
	if b.Put(obj("u1"), 2, func(held *int) bool { seen = held; return true }) {
		t.Error("Put recorded a value same called nothing new")
	}
	if seen == nil || *seen != 1 {
		t.Errorf("same was shown %v, want the value held (1)", seen)
	}
	if v, ok := b.Take(obj("u1"), always); !ok || v != 1 {
		t.Errorf("Take = %d, %v; want 1", v, ok)
	}
	if len(told) != 1 || told[0] != (types.NamespacedName{Namespace: "shop", Name: "web"}) {
		t.Errorf("told %v, want web once", told)
	}

	// A namesake's value is not obj's, and is dropped.
	if b.Put(obj("u2"), 3, func(held *int) bool { return held != nil }) == false {
		t.Error("a namesake's value counted as held")
	}
	if _, ok := b.Take(obj("u1"), always); ok {
		t.Error("u1 took u2's value")
	}
	// One keep refuses goes.
	b.Put(obj("u1"), 4, never)
	if _, ok := b.Take(obj("u1"), func(int) bool { return false }); ok {
		t.Error("a value keep refused was taken")
	}
	if _, ok := b.Take(obj("u1"), always); ok {
		t.Error("a value keep refused stayed")
	}
	b.Put(obj("u1"), 5, never)
	b.Forget(types.NamespacedName{Namespace: "shop", Name: "web"})
	if _, ok := b.Take(obj("u1"), always); ok {
		t.Error("a forgotten value stayed")
	}
}
