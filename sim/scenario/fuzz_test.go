package scenario

import (
	"io/fs"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sdrnet/sdrnet/scenarios"
)

// FuzzParse: Parse never panics, whatever YAML (or not-YAML) it is given,
// and every error it returns names the file, so a user knows where to
// look. The shipped scenarios and a few broken ones are the seeds.
//
// The fuzzer minimizes every input that finds new code, in time that grows
// faster than the input's length: the shipped files as they are (3 KiB,
// mostly prose and comments) kept it minimizing for most of a minute.
// Their structure without the prose is a few hundred bytes.
func FuzzParse(f *testing.F) {
	files, err := fs.Glob(scenarios.FS, "*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		data, err := fs.ReadFile(scenarios.FS, name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(withoutProse(f, data))
	}
	for _, s := range []string{
		"", "name: x\n", "name: [x\n", "- a\n- b\n", "name: x\nname: y\n",
		"name: x\ntopology:\n  loss: [1e-3, 1.5]\n",
		"name: x\ntransport:\n  scheme: [sr, \"ec:32,8\"]\n",
		"name: x\nquick:\n  workload.size: 1MiB\n",
		"name: x\ncompare: [transport.select]\ntransport:\n  select: [obs, single]\n",
		"a: &a [*a]\n", "name: !!binary aGk=\n", "name: x\nseed: 18446744073709551616\n",
	} {
		f.Add([]byte(s))
	}
	const file = "fuzz.yaml"
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return // scenario files are a few KiB
		}
		s, err := Parse(file, data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), file) {
				t.Fatalf("error %q does not name the file %s", err, file)
			}
			if s != nil {
				t.Fatalf("Parse returned a scenario with the error %v", err)
			}
			return
		}
		if s == nil {
			t.Fatal("Parse returned neither a scenario nor an error")
		}
	})
}

// withoutProse returns a scenario file without its comments and free-text
// keys, which the parser only copies.
func withoutProse(f *testing.F, data []byte) []byte {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		f.Fatalf("a shipped scenario does not parse as YAML: %v", err)
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); {
		switch root.Content[i].Value {
		case "description", "finding", "differences":
			root.Content = slices.Delete(root.Content, i, i+2)
		default:
			i += 2
		}
	}
	stripComments(&doc)
	out, err := yaml.Marshal(&doc)
	if err != nil {
		f.Fatal(err)
	}
	return out
}

func stripComments(n *yaml.Node) {
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	for _, c := range n.Content {
		stripComments(c)
	}
}
