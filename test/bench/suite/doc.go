// Package suite is the framework of fedmesh's benchmark suite: scenarios, interleaved repetitions of the
// variants a scenario compares, the statistics of their samples (median, spread, paired ratios), resource use of
// child processes read from /proc, and the report (Markdown, JSON, PNG plots) a run writes.
package suite
