// Package acceptance is what the live interpreter layers (customization, webhook) share about the objects they
// serve from: a Verdict on an object's current version and the Accepted condition that says it, and Statuses, which
// writes the verdicts to the objects' statuses as one shard of many (only when the status says something else, at
// most once per change of the verdict and once per restateAfter) and reports each change of standing once, and
// Remembered, the version each object's last verdict kept, which serves while its status keeps an older one (an
// edit came before the status write of the version accepted). The layers decide the verdicts; this package states
// them and remembers what they kept.
package acceptance
