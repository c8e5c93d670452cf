// Package workstate reads what a Work's status says of it. The binding stage judges a binding FullyApplied by it,
// and the binding-status stage tells by the same judgement when that stage's verdict is due; one function, so the
// two cannot disagree.
package workstate
