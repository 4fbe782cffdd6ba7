package render

import (
	"bytes"
	"strings"
)

// yamlParserProblems are the messages of YAML parser errors, which
// go.yaml.in/yaml/v3 reports at a 0-based line (its scanner errors, and
// every other message, are 1-based).
var yamlParserProblems = []string{
	"did not find expected <document start>",
	"did not find expected node content",
	"did not find expected key",
	"did not find expected '-' indicator",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found duplicate %TAG directive",
	"found undefined tag handle",
}

// syntaxPosition corrects the line go.yaml.in/yaml/v3 gives a syntax error
// (line is 0 when it gave none) and finds the column it does not give, from
// the text of the line: the unclosed bracket of a flow collection, the
// second ':' of "a: b: c", the character that cannot start a token, or
// the first character of the line.
func syntaxPosition(data []byte, line int, msg string) (int, int) {
	parser := false
	for _, p := range yamlParserProblems {
		if strings.HasPrefix(msg, p) {
			parser = true
			break
		}
	}
	if parser || line == 0 {
		line++
	}
	text := lineText(data, line)
	for line > 1 && len(bytes.TrimSpace(text)) == 0 {
		// At the end of the input: the cause is on the last line written.
		line--
		text = lineText(data, line)
	}
	if text == nil {
		return line, 0
	}
	col := firstNonSpace(text)
	switch {
	case strings.HasSuffix(msg, "',' or ']'"):
		col = unclosed(text, '[', col)
	case strings.HasSuffix(msg, "',' or '}'"):
		col = unclosed(text, '{', col)
	case strings.HasPrefix(msg, "did not find expected node content"):
		col = unclosed(text, '[', unclosed(text, '{', col))
	case strings.HasPrefix(msg, "mapping values are not allowed"):
		if i := secondColon(text); i >= 0 {
			col = runeColumn(text, i)
		}
	case strings.HasPrefix(msg, "found character that cannot start any token"):
		if i := bytes.IndexAny(text, "\t@`"); i >= 0 {
			col = runeColumn(text, i)
		}
	}
	return line, col
}

// lineText returns 1-based line n of data without its line break.
func lineText(data []byte, n int) []byte {
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(data, '\n')
		if j < 0 {
			return nil
		}
		data = data[j+1:]
	}
	if j := bytes.IndexByte(data, '\n'); j >= 0 {
		data = data[:j]
	}
	return bytes.TrimSuffix(data, []byte("\r"))
}

func firstNonSpace(text []byte) int {
	for i, c := range text {
		if c != ' ' {
			return runeColumn(text, i)
		}
	}
	return 1
}

func runeColumn(text []byte, i int) int {
	return len([]rune(string(text[:i]))) + 1
}

// unclosed returns the column of the innermost open bracket of the kind
// open that the line leaves unclosed (outside quotes), or def.
func unclosed(text []byte, open byte, def int) int {
	var stack []int
	var quote byte
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && (i == 0 || text[i-1] == ' '):
			i = len(text)
		case c == '[' || c == '{':
			stack = append(stack, i)
		case (c == ']' || c == '}') && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
	}
	for k := len(stack) - 1; k >= 0; k-- {
		if text[stack[k]] == open {
			return runeColumn(text, stack[k])
		}
	}
	return def
}

// secondColon returns the index of the second mapping indicator (": " or a
// final ':') of a line, outside quotes, or -1.
func secondColon(text []byte) int {
	seen := 0
	var quote byte
	for i, c := range text {
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == ':' && (i+1 == len(text) || text[i+1] == ' '):
			seen++
			if seen == 2 {
				return i
			}
		}
	}
	return -1
}

// tabAt reports whether the rune at 1-based column col of text is a tab
// in the line's indentation (only whitespace before it).
func tabAt(text []byte, col int) bool {
	for i, c := range []rune(string(text)) {
		switch {
		case i == col-1:
			return c == '\t'
		case c != ' ' && c != '\t' && c != '-':
			return false
		}
	}
	return false
}
