// Package rendering carries what the binding stage found when it rendered a binding's Works (the template
// missing, clusters whose Work could not be rendered, dependencies not found, the Works' generations as it left
// them) to the binding-status stage, which judges from it and the Works' own status the binding's FullyApplied
// condition, and writes it with the rest of the binding's status.
//
// The judgement sits with the status stage because that stage is woken by every change of a Work's status
// anyway: the binding stage renders when a binding, its template, its dependencies, its overrides or its clusters
// change, and is not woken again each time a member applies one of its Works, a pass that would render every Work
// for nothing.
//
// Outcomes live in memory only. One lost with its process is found again: the binding stage renders every binding
// when it starts, and until then the status stage keeps the condition the binding shows.
//
// fullyapplied.go is the pure judgement; store.go holds the outcomes between the two stages.
package rendering
