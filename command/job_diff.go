package command

import (
	"fmt"

	"github.com/droverhq/drover/structs"
)

// specDiff lists the fields of a job's spec that differ between the
// stored job old and the submitted job, one line per field, by path
// (structs.SpecFieldDiffs):
//
//	~ TaskGroups["train"].Count: 1 => 3
//	+ TaskGroups["train"].Meta.owner: "ml"
//	- Constraints[0].RTarget: "H100"
func specDiff(old, job *structs.Job) []string {
	return diffLines(structs.SpecFieldDiffs(old, job))
}

// diffLines renders field diffs one per line.
func diffLines(fields []*structs.FieldDiff) []string {
	var lines []string
	for _, f := range fields {
		switch f.Type {
		case structs.DiffTypeAdded:
			lines = append(lines, fmt.Sprintf("+ %s: %s", f.Name, f.New))
		case structs.DiffTypeDeleted:
			lines = append(lines, fmt.Sprintf("- %s: %s", f.Name, f.Old))
		default:
			lines = append(lines, fmt.Sprintf("~ %s: %s => %s", f.Name, f.Old, f.New))
		}
	}
	return lines
}
