// Package templates caches the resource templates that propagation policies select: one dynamic informer per
// selected kind, in one version of it, started and stopped as the detector's policies come and go. The detector
// learns of template changes through it; the binding and status stages read templates through it too, so a
// template is held in memory once and read from the API server only when no informer runs for its kind in the
// version asked for.
package templates
