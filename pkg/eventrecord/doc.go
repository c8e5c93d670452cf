// Package eventrecord writes the Kubernetes events of fedmesh's processes, as core/v1 Events through client-go's
// record broadcaster.
//
// It exists for how repeats are folded. client-go's events/v1 broadcaster (what controller-runtime's
// GetEventRecorder returns) folds every event of one reason on one object within six minutes into a series that
// keeps the first note, so a binding rescheduled twice showed its first placement and a sharding config its first
// epoch. The record broadcaster's correlator folds only identical messages (a count on one Event) and, from the
// tenth different message of one reason on one object (until that reason has been quiet for ten minutes), shows
// the latest as "(combined from similar events)": what kubectl users read elsewhere.
package eventrecord
