package scenario

import (
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A scenario's description and differences are prose about the run, so
// they state no figure of their own: a parameter's value is written as
// ${path} (${topology.host_rate}) and Expand fills in the values the run
// had, --set overrides and the quick subset included. The paper's figures
// belong in finding and in the claims, which quote the paper.

var placeholder = regexp.MustCompile(`\$\{([^}]*)\}`)

// checkProse returns an error naming the first ${...} in text that is
// no parameter.
func checkProse(file, key string, node *yaml.Node) error {
	for _, m := range placeholder.FindAllStringSubmatch(node.Value, -1) {
		if _, ok := schema[m[1]]; !ok {
			return errAt(file, node, "%s: %s names no parameter: write ${path} with a path from docs/scenarios.md, like ${topology.host_rate}", key, m[0])
		}
	}
	return nil
}

// Expand writes text with every ${path} replaced by the path's values in
// cells, in the order they first appear: "128KiB, 16MiB, 1GiB".
func Expand(text string, cells []Cell) string {
	return placeholder.ReplaceAllStringFunc(text, func(m string) string {
		path := m[2 : len(m)-1]
		var vals []string
		for _, c := range cells {
			if v, ok := c.Params[path]; ok && !slices.Contains(vals, v) {
				vals = append(vals, v)
			}
		}
		if len(vals) == 0 {
			return m
		}
		return strings.Join(vals, ", ")
	})
}

// Figure finds a figure typed into prose: a number that starts a word,
// outside ${...}. Names with digits (p99, ns-3, E-ECMP's, ec:32,8) are no
// figures. The built-in scenarios are tested to have none.
func Figure(text string) string {
	text = placeholder.ReplaceAllString(text, "")
	if m := figureRe.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return ""
}

var figureRe = regexp.MustCompile(`(?:^|[\s(\[/])([0-9][^\s,;)]*)`)
