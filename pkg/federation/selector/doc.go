// Package selector matches the resource selectors of propagation and override policies against a template, and
// ranks how precisely a selector names it (by name, by labels, by kind alone): the detector prefers the more
// precise policy of equal priority, and override policies apply from the least precise to the most, so that the
// most precise one has the last word. It also matches the fieldSelector of a cluster affinity against a member
// cluster (ClusterFields), for placement and override rules alike. Pure: no I/O.
package selector
