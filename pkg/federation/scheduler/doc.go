// Package scheduler decides where a binding's template goes: which member clusters, and how many replicas each
// gets. It is pure — clusters, placement, the previous result and the time come in as values, the decision goes
// out as a value — so every rule is table-tested here and the controller (package scheduling) only reads and
// writes objects.
//
// Schedule filters the candidate clusters (clusterAffinity or the ordered clusterAffinities, taints, readiness,
// deletion, capacity), applies the spread constraints (choosing clusters with room for replicas divided by room),
// and divides the replicas (Duplicated, Weighted by static or dynamic weights, Aggregated). It is deterministic
// and stable: given its own previous result and unchanged inputs it returns the same result, and on a change it
// moves as few replicas as the placement allows. Failover says which of a binding's clusters must be left because
// they stayed unhealthy past the binding's tolerations.
package scheduler
