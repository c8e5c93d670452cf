// Package acceptance is what the live interpreter layers (customization, webhook) share about the objects they
// serve from: a Verdict on an object's current version and the Accepted condition that says it, and Statuses, which
// writes the verdicts to the objects' statuses as one shard of many (only when the status says something else, at
// most once per change of the verdict and once per restateAfter) and reports each change of standing once. The
// layers decide the verdicts and keep the versions; this package only states them.
package acceptance
