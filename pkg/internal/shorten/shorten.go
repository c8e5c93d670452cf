package shorten

import "unicode/utf8"

// EventNote is the most an event's note may hold (the events API refuses longer ones).
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
