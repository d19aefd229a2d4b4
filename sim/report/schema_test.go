package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestSchemaDocumented: every column of results.csv and tiers.csv and
// every key of a cell in results.json is named in docs/reports.md, so the
// schema a user reads is the one the files have.
func TestSchemaDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/reports.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := func(name string) bool { return bytes.Contains(doc, []byte("`"+name+"`")) }
	params := map[string]bool{}
	for _, r := range []*Run{testRun(), fabricRun()} {
		for _, p := range paramColumns(r.Cells) {
			params[p.Name] = true
		}
		for _, write := range []func(*bytes.Buffer, *Run) error{
			func(b *bytes.Buffer, r *Run) error { return WriteCSV(b, r) },
			func(b *bytes.Buffer, r *Run) error { return WriteTiersCSV(b, r) },
		} {
			var b bytes.Buffer
			if err := write(&b, r); err != nil {
				t.Fatal(err)
			}
			header, err := csv.NewReader(&b).Read()
			if err != nil {
				t.Fatal(err)
			}
			for _, col := range header {
				if !params[col] && !documented(col) {
					t.Errorf("CSV column %q is not in docs/reports.md", col)
				}
			}
		}
		var b bytes.Buffer
		if err := WriteJSON(&b, r); err != nil {
			t.Fatal(err)
		}
		var raw struct {
			Cells []map[string]json.RawMessage `json:"cells"`
		}
		if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
			t.Fatal(err)
		}
		for k, v := range raw.Cells[0] {
			if !documented(k) {
				t.Errorf("JSON cell key %q is not in docs/reports.md", k)
			}
			if k == "tiers" && strings.HasPrefix(string(v), "[{") {
				var tiers []map[string]any
				if err := json.Unmarshal(v, &tiers); err != nil {
					t.Fatal(err)
				}
				for tk := range tiers[0] {
					if !documented(tk) {
						t.Errorf("JSON tier key %q is not in docs/reports.md", tk)
					}
				}
			}
		}
	}
}
