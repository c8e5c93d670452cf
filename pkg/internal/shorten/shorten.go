package shorten

import "unicode/utf8"

// EventNote is the most an event's message holds: within the note limit of the events.k8s.io API (1024), which
// core/v1 Events, as fedmesh writes them, are not held to, but which keeps a message readable in kubectl.
const EventNote = 1000

// To is s when it has at most limit bytes, otherwise its longest beginning that with "..." has at most limit
// bytes, cut where a character begins.
func To(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	n := limit - len("...")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:max(n, 0)] + "..."
}
