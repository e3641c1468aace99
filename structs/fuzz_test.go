package structs

import (
	"encoding/json"
	"testing"
)

// FuzzJobJSON decodes arbitrary bytes as a job the way PUT /v1/jobs does,
// then runs what the endpoints run on it: CheckShape and CheckLimits, and
// on a job that passes both, Copy, Canonicalize and Validate. None may
// panic.
func FuzzJobJSON(f *testing.F) {
	for _, src := range []string{
		`{"ID": "x", "Type": "batch", "Datacenters": ["dc1"], "TaskGroups": [{"Name": "g", "Count": 1,
		  "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"},
		  "Resources": {"Devices": [{"Name": "nvidia/gpu", "Count": 2, "Constraints": [{"LTarget": "${device.model}", "RTarget": "H100", "Operand": "="}]}]}}]}]}`,
		`{"ID": "x", "TaskGroups": [null]}`,
		`{"ID": "x", "TaskGroups": [{"Tasks": [null]}]}`,
		`{"ID": "x", "TaskGroups": [{"Tasks": [{"Resources": {"Devices": [null]}}]}]}`,
		`{"ID": "x", "TaskGroups": [{"Tasks": [{"Resources": {"Devices": [{"Count": 0}]}}]}]}`,
		`{"ID": "x", "TaskGroups": [{"Tasks": [{"Resources": {"Devices": [{"Count": 9223372036854775808}]}}]}]}`,
		`{"ID": "x", "Constraints": [null], "Affinities": [null], "Spreads": [null, {"SpreadTarget": [null]}]}`,
		`{"ID": "x", "TaskGroups": [{"Count": 1000000000, "Spreads": [{"SpreadTarget": [null]}], "Gang": {}, "Update": {}}]}`,
		`{"ID": "x", "TaskGroups": [{"Tasks": [{"Config": {"a": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}]}]}`,
		`{"ID": "x", "TaskGroups": [{"ReschedulePolicy": {}, "RestartPolicy": {}, "Tasks": [{"LogConfig": {}}]}]}`,
		`null`, `{}`, `[]`,
	} {
		f.Add([]byte(src))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if JSONDepth(src, 65) > 64 {
			return // the HTTP layer refuses it before decoding
		}
		var job Job
		if err := json.Unmarshal(src, &job); err != nil {
			return
		}
		if job.CheckShape() != nil || job.CheckLimits(Limits{}) != nil {
			return
		}
		c := job.Copy()
		c.Canonicalize()
		_ = c.Validate()
		_ = c.Warnings()
		_ = c.GPUCount()
	})
}
