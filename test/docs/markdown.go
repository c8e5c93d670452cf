package docs

import (
	"fmt"
	"regexp"
	"strings"
)

// The modes of a shell block.
const (
	ModeRun          = "run"           // the test runs it
	ModeCheck        = "check"         // could run here but takes too long (make demo): checked only
	ModeNeedsDocker  = "needs-docker"  // checked only
	ModeNeedsCluster = "needs-cluster" // checked only
	// ModeSameAs, followed by a path, says a block shows that file's content exactly.
	ModeSameAs = "same-as"
)

// Block is a fenced code block of a Markdown page.
type Block struct {
	Lang string
	// Mode is the text of the "<!-- test: ... -->" comment on the line before the fence; empty if none.
	Mode string
	Text string
	Line int // of the opening fence, 1-based
}

var markerRE = regexp.MustCompile(`^<!--\s*test:\s*(.*?)\s*-->$`)

// ParseBlocks returns the fenced code blocks of a Markdown page.
func ParseBlocks(page string) ([]Block, error) {
	var blocks []Block
	lines := strings.Split(page, "\n")
	prev := ""
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(line, "```") {
			if line != "" {
				prev = line
			}
			continue
		}
		b := Block{Lang: strings.TrimPrefix(line, "```"), Line: i + 1}
		if m := markerRE.FindStringSubmatch(prev); m != nil {
			b.Mode = m[1]
		}
		var text []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			text = append(text, lines[i])
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: code block not closed", b.Line)
		}
		b.Text = strings.Join(text, "\n") + "\n"
		blocks = append(blocks, b)
		prev = ""
	}
	return blocks, nil
}

// IsShell says whether a block holds shell commands.
func (b Block) IsShell() bool {
	switch b.Lang {
	case "sh", "bash", "shell", "console":
		return true
	}
	return false
}

// Commands splits a shell block into simple commands, each a list of words: continuation lines are joined,
// comments dropped, quotes removed, and lists and pipelines (&&, ||, |, ;) split. It is no shell, but it is enough
// for the plain commands that documentation shows.
func Commands(script string) ([][]string, error) {
	script = strings.ReplaceAll(script, "\\\n", " ")
	var cmds [][]string
	for n, line := range strings.Split(script, "\n") {
		var words []string
		var word strings.Builder
		inWord := false
		var quote rune
		flush := func() {
			if inWord {
				words = append(words, word.String())
			}
			word.Reset()
			inWord = false
		}
		endCommand := func() {
			flush()
			if len(words) > 0 {
				cmds = append(cmds, words)
			}
			words = nil
		}
		runes := []rune(line)
	scan:
		for i := 0; i < len(runes); i++ {
			r := runes[i]
			switch {
			case quote != 0:
				if r == quote {
					quote = 0
				} else {
					word.WriteRune(r)
				}
			case r == '\'' || r == '"':
				quote, inWord = r, true
			case r == ' ' || r == '\t':
				flush()
			case r == '#' && !inWord:
				break scan
			case r == '&' || r == '|' || r == ';':
				endCommand()
				if i+1 < len(runes) && (runes[i+1] == '&' || runes[i+1] == '|') {
					i++
				}
			default:
				word.WriteRune(r)
				inWord = true
			}
		}
		if quote != 0 {
			return nil, fmt.Errorf("line %d: unclosed quote", n+1)
		}
		endCommand()
	}
	return cmds, nil
}

// Flags returns the flag names a command's words use ("--set" and "-f" for "--set=x" and "-f"), leaving out
// negative numbers and a lone "-".
func Flags(words []string) []string {
	var flags []string
	for _, w := range words {
		if len(w) < 2 || w[0] != '-' || (w[1] >= '0' && w[1] <= '9') {
			continue
		}
		name, _, _ := strings.Cut(w, "=")
		flags = append(flags, name)
	}
	return flags
}
